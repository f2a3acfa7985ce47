// The recorded RedisBloom replies in tests/fixtures/bf/, read for the unit tests: a small JSON
// reader for bf-cases.json / bf-expected.json, base64 and hex decoding. BP_FIXTURES is the
// fixtures folder (a compile definition).
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bloomproxy::filters::fixtures {

// ---------------------------------------------------------------------------------------------
// Fixture reading: a small JSON reader for bf-cases.json / bf-expected.json, and base64.

struct Json {
  enum Type { kNull, kBool, kNumber, kString, kArray, kObject } type = kNull;
  std::string text;  // string value, or the number's spelling
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> members;

  const Json* Get(std::string_view key) const {
    for (const auto& [k, v] : members) {
      if (k == key) return &v;
    }
    return nullptr;
  }
};

class JsonReader {
 public:
  explicit JsonReader(std::string_view s) : s_(s) {}

  bool Parse(Json* out) {
    if (!Value(out)) return false;
    Space();
    return pos_ == s_.size();
  }

 private:
  void Space() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool Eat(char c) {
    Space();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool Value(Json* out) {
    Space();
    if (pos_ >= s_.size()) return false;
    const char c = s_[pos_];
    if (c == '{') {
      out->type = Json::kObject;
      ++pos_;
      if (Eat('}')) return true;
      do {
        std::string key;
        Space();
        if (!String(&key) || !Eat(':')) return false;
        Json v;
        if (!Value(&v)) return false;
        out->members.emplace_back(std::move(key), std::move(v));
      } while (Eat(','));
      return Eat('}');
    }
    if (c == '[') {
      out->type = Json::kArray;
      ++pos_;
      if (Eat(']')) return true;
      do {
        Json v;
        if (!Value(&v)) return false;
        out->items.push_back(std::move(v));
      } while (Eat(','));
      return Eat(']');
    }
    if (c == '"') {
      out->type = Json::kString;
      return String(&out->text);
    }
    for (std::string_view word : {"true", "false", "null"}) {
      if (s_.substr(pos_, word.size()) == word) {
        out->type = word == "null" ? Json::kNull : Json::kBool;
        out->text = std::string(word);
        pos_ += word.size();
        return true;
      }
    }
    out->type = Json::kNumber;
    while (pos_ < s_.size() && std::strchr("+-0123456789.eE", s_[pos_]) != nullptr) {
      out->text.push_back(s_[pos_++]);
    }
    return !out->text.empty();
  }
  static void Utf8(uint32_t cp, std::string* out) {
    if (cp < 0x80) {
      out->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out->push_back(static_cast<char>(0xc0 | (cp >> 6)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else if (cp < 0x10000) {
      out->push_back(static_cast<char>(0xe0 | (cp >> 12)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else {
      out->push_back(static_cast<char>(0xf0 | (cp >> 18)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    }
  }
  bool Hex4(uint32_t* v) {
    if (pos_ + 4 > s_.size()) return false;
    *v = std::stoul(std::string(s_.substr(pos_, 4)), nullptr, 16);
    pos_ += 4;
    return true;
  }
  bool String(std::string* out) {
    if (pos_ >= s_.size() || s_[pos_] != '"') return false;
    ++pos_;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      char c = s_[pos_++];
      if (c != '\\') {
        out->push_back(c);
        continue;
      }
      if (pos_ >= s_.size()) return false;
      c = s_[pos_++];
      switch (c) {
        case 'b':
          out->push_back('\b');
          break;
        case 'f':
          out->push_back('\f');
          break;
        case 'n':
          out->push_back('\n');
          break;
        case 'r':
          out->push_back('\r');
          break;
        case 't':
          out->push_back('\t');
          break;
        case 'u': {
          uint32_t cp = 0;
          if (!Hex4(&cp)) return false;
          if (cp >= 0xd800 && cp < 0xdc00 && s_.substr(pos_, 2) == "\\u") {
            pos_ += 2;
            uint32_t low = 0;
            if (!Hex4(&low)) return false;
            cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
          }
          Utf8(cp, out);
          break;
        }
        default:
          out->push_back(c);
          break;  // \" \\ \/
      }
    }
    if (pos_ >= s_.size()) return false;
    ++pos_;
    return true;
  }

  std::string_view s_;
  size_t pos_ = 0;
};

inline std::string Base64Decode(std::string_view in) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    const int v = value(c);
    if (v < 0) continue;  // '=' padding
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return out;
}

inline std::string HexDecode(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

struct Case {
  std::string name;
  std::vector<std::vector<std::string>> cmds;
  std::vector<std::string> replies;  // raw RESP2 bytes
};

inline Json ReadJsonFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  Json root;
  EXPECT_FALSE(text.empty()) << path;
  EXPECT_TRUE(JsonReader(text).Parse(&root)) << path;
  return root;
}

// A recorded vector set: <prefix>-cases.json and <prefix>-expected.json in BP_FIXTURES.
inline std::vector<Case> LoadCases(const std::string& prefix) {
  const Json specs = ReadJsonFile(std::string(BP_FIXTURES) + "/" + prefix + "-cases.json");
  const Json expected = ReadJsonFile(std::string(BP_FIXTURES) + "/" + prefix + "-expected.json");
  std::map<std::string, const Json*> replies;
  for (const Json& e : expected.items) replies[e.Get("name")->text] = e.Get("replies");
  std::vector<Case> out;
  for (const Json& spec : specs.items) {
    Case c;
    c.name = spec.Get("name")->text;
    for (const Json& cmd : spec.Get("cmds")->items) {
      std::vector<std::string> args;
      for (const Json& arg : cmd.items) {
        args.push_back(arg.type == Json::kObject ? HexDecode(arg.Get("hex")->text) : arg.text);
      }
      c.cmds.push_back(std::move(args));
    }
    for (const Json& r : replies.at(c.name)->items) c.replies.push_back(Base64Decode(r.text));
    EXPECT_EQ(c.cmds.size(), c.replies.size()) << c.name;
    out.push_back(std::move(c));
  }
  return out;
}

inline const std::vector<Case>& Cases() {
  static const std::vector<Case> cases = LoadCases("bf");
  return cases;
}

}  // namespace bloomproxy::filters::fixtures
