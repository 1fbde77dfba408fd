# SPDX-License-Identifier: GPL-2.0-only
# An app as a fleet runs it: a process title (as Puma or Sidekiq set it) and a method that keeps
# the CPU busy until killed. Usage: ruby app.rb OUT TITLE METHOD   (TITLE "-": keep the title)
require_relative "common"

OUT, TITLE, WORK = ARGV

def shop_work
  spin_for(0.05)
end
def jobs_work
  spin_for(0.05)
end
def later_work
  spin_for(0.05)
end
def reuse_a_work
  spin_for(0.05)
end
def reuse_b_work
  spin_for(0.05)
end
def late_work
  spin_for(0.05)
end
def ready_work
  spin_for(0.05)
end

$0 = TITLE unless TITLE == "-"
write_facts(OUT, {})
loop { send(WORK) }
