# SPDX-License-Identifier: GPL-2.0-only
# Parses a large XML document with Nokogiri (Debian's ruby-nokogiri, on the system's libxml2) in a
# loop: most of its time is in libxml2's parser, under Nokogiri's C method
# (Nokogiri::XML::Document.read_memory) and Nokogiri's Ruby code, under this script's parse_doc.
# Usage: ruby nokogiri_parse.rb OUT
require "nokogiri"
require_relative "common"
OUT = ARGV.fetch(0)

# About 8 MB in few nodes, most of it text: parsing costs by the byte, freeing a document by the
# node, and the freeing runs as Ruby again (the postponed jobs that Document#initialize runs), not
# in the parser's own code: with 20,000 small elements it took a third to half of the samples.
def make_xml
  r = Random.new(42)
  words = random_words(r)
  items = Array.new(300) do |i|
    desc = Array.new(1600) { words[r.rand(words.size)] }.join(" ")
    %(<item id="#{i}" kind="k#{r.rand(50)}"><name>#{words[r.rand(words.size)]}</name>) +
      %(<desc>#{desc} &amp; #{desc}</desc></item>)
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
