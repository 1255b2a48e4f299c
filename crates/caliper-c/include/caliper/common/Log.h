// Caliper: cali::Log (drop-in for the reference's caliper/common/Log.h):
// messages in Caliper's log, prefixed "== CALIPER: " and written where
// CALI_LOG_LOGFILE says, shown if CALI_LOG_VERBOSITY is at least their
// level (level 0, errors and warnings, always):
//
//     cali::Log(1).stream() << "solver: " << n << " iterations" << std::endl;
//
// The text is collected and handed to the log as one message when the
// Log object goes (or at the next stream() call), so that messages of
// concurrent threads do not interleave.
#ifndef CALI_COMMON_LOG_H
#define CALI_COMMON_LOG_H

#include "../cali_cxx_runtime.h"

#include <cstring>
#include <iostream>
#include <sstream>
#include <string>

namespace cali
{

class Log
{
    int                m_level;
    std::ostringstream m_text;

    Log(const Log&);
    Log& operator=(const Log&);

    void write_pending()
    {
        std::string text = m_text.str();
        if (!text.empty())
            cali_log_write(m_level, text.c_str()); // shown if the verbosity is at least m_level
        m_text.str(std::string());
    }

public:
    explicit Log(int level = 1) : m_level(level) {}
    ~Log() { write_pending(); }

    /// CALI_LOG_VERBOSITY.
    static int  verbosity() { return cali_log_verbosity(); }
    static void set_verbosity(int level) { cali_log_set_verbosity(level); }
    /// Whether messages of level appear.
    static bool is_verbose(int level) { return verbosity() >= level; }
    /// Appends text to what every message starts with after "== CALIPER: ".
    static void add_prefix(const std::string& text) { cali_log_add_prefix(text.c_str()); }
    /// The log is set up with the runtime and closed with the process:
    /// these only make sure the runtime (which reads CALI_LOG_*) is up.
    static void init() { cali_init(); }
    static void fini() {}

    /// The stream of one message.
    std::ostream& stream()
    {
        write_pending();
        return m_text;
    }

    /// Starts a message with msg and the description of error errnum.
    std::ostream& perror(int errnum, const char* msg = "")
    {
        return stream() << msg << std::strerror(errnum);
    }
};

} // namespace cali

#endif
