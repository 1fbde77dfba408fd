# SPDX-License-Identifier: GPL-2.0-only
# Required by labels.rb: code at the top of a required file.
spin("top of a required file", 1 => "<top (required)>")
