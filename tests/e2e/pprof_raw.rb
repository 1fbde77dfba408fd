# SPDX-License-Identifier: GPL-2.0-only
# Reads a pprof file with the real reader, `go tool pprof -raw`, and parses what it prints.
require "open3"
require "time"

module PprofRaw
  Location = Struct.new(:id, :mapping, :name, :file, :line, :start_line, :address)
  Sample = Struct.new(:count, :nanos, :locations, :labels)
  # time: when the profile starts (a Time), duration: its length in seconds (a String);
  # ranges: mapping id -> [memory start, limit, file offset]
  Profile = Struct.new(:samples, :locations, :mappings, :period, :duration, :period_type, :sample_types,
                       :time, :ranges) do
    # Frames of a sample, leaf first.
    def frames(sample)
      sample.locations.map { |id| locations.fetch(id) }
    end

    def cfunc?(loc)
      mappings[loc.mapping] == "[ruby cfunc]"
    end

    def samples_of(pid)
      samples.select { |s| s.labels["pid"] == pid.to_s }
    end
  end

  def self.read(path)
    out, err, st = Open3.capture3("go", "tool", "pprof", "-raw", path)
    raise "go tool pprof -raw #{path} failed: #{err.strip}" unless st.success?
    parse(out)
  end

  def self.parse(text)
    prof = Profile.new([], {}, {}, nil, nil, nil, nil, nil, {})
    section = nil
    text.each_line do |line|
      line = line.chomp
      case line
      when /^Period: (\d+)/ then prof.period = Integer($1)
      when /^PeriodType: (\S+) (\S+)/ then prof.period_type = "#{$1}/#{$2}"
      when %r{^(\S+/\S+)( \S+/\S+)*$} then prof.sample_types = line.split if section == :samples
      when /^Duration: ([\d.:]+)/ then prof.duration = $1
      when /^Time: (.+)$/ then prof.time = Time.parse($1)
      when /^Samples:/ then section = :samples
      when /^Locations/ then section = :locations
      when /^Mappings/ then section = :mappings
      else
        case section
        when :samples
          if line =~ /^\s+(\d+)\s+(\d+): ([\d ]*)$/
            prof.samples << Sample.new(Integer($1), Integer($2), $3.split.map { |x| Integer(x) }, {})
          elsif line =~ /^\s+\S+:\[/ && (s = prof.samples.last)
            line.scan(/(\S+?):\[([^\]]*)\]/) { |k, v| s.labels[k] = v }
          end
        when :locations
          # ids are padded to 6 columns: from 100000 on, a line starts with its id
          if line =~ /^\s*(\d+): 0x(\h+) M=(\d+) (.*) (\S*):(-?\d+) s=(-?\d+)/
            prof.locations[Integer($1)] = Location.new(Integer($1), Integer($3), $4, $5, Integer($6), Integer($7),
                                                       Integer($2, 16))
          end
        when :mappings
          if line =~ /^(\d+): (\S+) (\S+(?: \S+)*?)\s+\[/
            prof.mappings[Integer($1)] = $3
            prof.ranges[Integer($1)] = $2.split("/").map { |x| Integer(x, 16) }
          end
        end
      end
    end
    prof
  end
end
