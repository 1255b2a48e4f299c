/* Caliper: timed asynchronous events (drop-in for the reference's
 * caliper/AsyncEvent.h). TimedAsyncEvent::begin("msg") emits
 * async.begin=msg; end() emits async.end=msg with event.duration.ns, the
 * time since the begin. The async_event service turns them into
 * snapshots. */
#ifndef CALI_ASYNC_EVENT_H
#define CALI_ASYNC_EVENT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The C functions behind cali::TimedAsyncEvent: the begin stores the
 * event's start time in *start_ns, the end measures from it. */
void cali_timed_async_event_begin(const char* message, uint64_t* start_ns);
void cali_timed_async_event_end(const char* message, uint64_t start_ns);

#ifdef __cplusplus
} /* extern "C" */

#include <string>

namespace cali
{

/* A timed asynchronous event: a plain value (message and start time). */
class TimedAsyncEvent
{
    std::string m_message;
    uint64_t    m_start_ns;
    bool        m_open;

public:

    TimedAsyncEvent() : m_start_ns(0), m_open(false) {}

    /* Emits async.end and the duration since the begin (once). */
    void end()
    {
        if (m_open) {
            cali_timed_async_event_end(m_message.c_str(), m_start_ns);
            m_open = false;
        }
    }

    /* Emits async.begin=message and returns the event. */
    static TimedAsyncEvent begin(const char* message)
    {
        TimedAsyncEvent event;
        event.m_message = message ? message : "";
        cali_timed_async_event_begin(event.m_message.c_str(), &event.m_start_ns);
        event.m_open = true;
        return event;
    }
};

} // namespace cali

#endif /* __cplusplus */

#endif /* CALI_ASYNC_EVENT_H */
