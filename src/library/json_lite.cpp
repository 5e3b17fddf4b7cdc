#include "library/json_lite.hpp"

#include <cstdlib>

#include <fmt/format.h>

#include "plan/shape.hpp"

namespace attn {

const json_value& json_value::at(const std::string& name) const {
  auto it = fields.find(name);
  if (it == fields.end()) throw invalid_input(fmt::format("JSON object has no field '{}'", name));
  return it->second;
}

namespace {

class json_reader {
 public:
  json_reader(const std::string& text, const std::string& what) : m_text(text), m_what(what) {}

  json_value document() {
    json_value v = value();
    skip_blanks();
    if (m_at != m_text.size()) fail("text after the end of the document");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw invalid_input(fmt::format("{}: invalid JSON at offset {}: {}", m_what, m_at, why));
  }
  void skip_blanks() {
    while (m_at < m_text.size() && (m_text[m_at] == ' ' || m_text[m_at] == '\n' || m_text[m_at] == '\r' ||
                                    m_text[m_at] == '\t'))
      ++m_at;
  }
  char peek() {
    skip_blanks();
    if (m_at >= m_text.size()) fail("unexpected end");
    return m_text[m_at];
  }
  void expect(char c) {
    if (peek() != c) fail(fmt::format("expected '{}'", c));
    ++m_at;
  }
  bool literal(const char* word) {
    const std::string w(word);
    if (m_text.compare(m_at, w.size(), w) != 0) return false;
    m_at += w.size();
    return true;
  }
  std::string string_value() {
    expect('"');
    std::string out;
    while (m_at < m_text.size() && m_text[m_at] != '"') {
      char c = m_text[m_at++];
      if (c == '\\') {
        if (m_at >= m_text.size()) fail("unfinished escape");
        const char e = m_text[m_at++];
        c = e == 'n' ? '\n' : e == 't' ? '\t' : e;
        if (e == 'u') fail("\\u escapes are not supported");
      }
      out += c;
    }
    if (m_at >= m_text.size()) fail("unfinished string");
    ++m_at;
    return out;
  }
  json_value value() {
    json_value v;
    const char c = peek();
    if (c == '{') {
      v.type = json_value::kind::object;
      ++m_at;
      if (peek() == '}') return ++m_at, v;
      for (;;) {
        std::string key = string_value();
        expect(':');
        v.fields[key] = value();
        if (peek() == ',') { ++m_at; continue; }
        expect('}');
        return v;
      }
    }
    if (c == '[') {
      v.type = json_value::kind::array;
      ++m_at;
      if (peek() == ']') return ++m_at, v;
      for (;;) {
        v.items.push_back(value());
        if (peek() == ',') { ++m_at; continue; }
        expect(']');
        return v;
      }
    }
    if (c == '"') {
      v.type = json_value::kind::string;
      v.text = string_value();
      return v;
    }
    if (literal("true")) { v.type = json_value::kind::boolean; v.boolean = true; return v; }
    if (literal("false")) { v.type = json_value::kind::boolean; return v; }
    if (literal("null")) return v;
    const char* begin = m_text.c_str() + m_at;
    char* end = nullptr;
    v.number = std::strtod(begin, &end);
    if (end == begin) fail("expected a value");
    v.type = json_value::kind::number;
    m_at += static_cast<size_t>(end - begin);
    return v;
  }

  const std::string& m_text;
  std::string m_what;
  size_t m_at = 0;
};

}  // namespace

json_value parse_json(const std::string& text, const std::string& what) { return json_reader(text, what).document(); }

}  // namespace attn
