// Caliper: cali::StringConverter (drop-in for the reference's
// caliper/common/StringConverter.h): a setting's text, read as the type
// the caller wants, with the runtime's rules (booleans are true/t/false/f
// in any case, or a number; lists are split at the separators, each item
// trimmed). What RuntimeConfig::get returns.
#ifndef CALI_COMMON_STRINGCONVERTER_H
#define CALI_COMMON_STRINGCONVERTER_H

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace cali
{

class StringConverter
{
    std::string m_str;

    static std::string trimmed(const std::string& s)
    {
        std::size_t b = 0, e = s.size();
        while (b < e && std::isspace(static_cast<unsigned char>(s[b])))
            ++b;
        while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1])))
            --e;
        return s.substr(b, e - b);
    }

    static void set_ok(bool* okptr, bool ok)
    {
        if (okptr)
            *okptr = ok;
    }

public:
    StringConverter() {}
    StringConverter(const std::string& str) : m_str(str) {}
    StringConverter(const char* str) : m_str(str ? str : "") {}

    std::string to_string() const { return m_str; }

    bool to_bool(bool* okptr = 0) const
    {
        std::string s = trimmed(m_str);
        for (std::size_t i = 0; i < s.size(); ++i)
            s[i] = static_cast<char>(std::tolower(static_cast<unsigned char>(s[i])));
        if (s == "true" || s == "t") {
            set_ok(okptr, true);
            return true;
        }
        if (s == "false" || s == "f") {
            set_ok(okptr, true);
            return false;
        }
        bool     ok = false;
        uint64_t n  = to_uint(&ok);
        set_ok(okptr, ok);
        return ok && n != 0;
    }

    int to_int(bool* okptr = 0) const
    {
        std::string s   = trimmed(m_str);
        char*       end = 0;
        long        v   = std::strtol(s.c_str(), &end, 10);
        set_ok(okptr, !s.empty() && *end == '\0');
        return static_cast<int>(v);
    }

    uint64_t to_uint(bool* okptr = 0, int base = 10) const
    {
        std::string        s   = trimmed(m_str);
        char*              end = 0;
        unsigned long long v   = std::strtoull(s.c_str(), &end, base);
        set_ok(okptr, !s.empty() && s[0] != '-' && *end == '\0');
        return v;
    }

    double to_double(bool* okptr = 0) const
    {
        std::string s   = trimmed(m_str);
        char*       end = 0;
        double      v   = std::strtod(s.c_str(), &end);
        set_ok(okptr, !s.empty() && *end == '\0');
        return v;
    }

    /// The items between any of separators, trimmed, empty ones dropped.
    std::vector<std::string> to_stringlist(const char* separators = ",", bool* okptr = 0) const
    {
        std::vector<std::string> list;
        std::string              item;
        for (std::size_t i = 0; i <= m_str.size(); ++i) {
            if (i == m_str.size() || std::strchr(separators, m_str[i])) {
                item = trimmed(item);
                if (!item.empty())
                    list.push_back(item);
                item.clear();
            } else {
                item += m_str[i];
            }
        }
        set_ok(okptr, true);
        return list;
    }
};

} // namespace cali

#endif
