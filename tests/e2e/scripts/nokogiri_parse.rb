# SPDX-License-Identifier: GPL-2.0-only
# Parses a large XML document with Nokogiri (Debian's ruby-nokogiri, on the system's libxml2) in a
# loop: most of its time is in libxml2's parser, under Nokogiri's C method
# (Nokogiri::XML::Document.read_memory) and Nokogiri's Ruby code, under this script's parse_doc.
# Usage: ruby nokogiri_parse.rb OUT
require "nokogiri"
require_relative "common"
OUT = ARGV.fetch(0)

def make_xml
  r = Random.new(42)
  items = Array.new(20_000) do |i|
    name = Array.new(r.rand(3..12)) { (97 + r.rand(26)).chr }.join
    %(<item id="#{i}" kind="k#{r.rand(50)}"><name>#{name}</name><price>#{r.rand(10_000)}</price>) +
      %(<tags><tag>a#{r.rand(9)}</tag><tag>b#{r.rand(9)}</tag></tags></item>)
  end
  "<?xml version=\"1.0\"?>\n<catalog>#{items.join("\n")}</catalog>\n"
end

def parse_doc(xml)
  $locs ||= caller_locations(0); Nokogiri::XML(xml)
end

def parse_loop(xml)
  written = false
  while true
    doc = parse_doc(xml)
    write_facts(OUT, "frames" => location_facts($locs), "items" => doc.root.children.size) unless written
    written = true
  end
end

parse_loop(make_xml)
