// Caliper: snapshot records as lists of entries (drop-in for the
// reference's caliper/SnapshotRecord.h): SnapshotView, a read-only view
// of entries (trigger information, a pulled snapshot); SnapshotBuilder,
// which appends entries into a caller's fixed-size array; and
// FixedSizeSnapshotRecord<N>, an array with its builder.
#ifndef CALI_SNAPSHOTRECORD_H
#define CALI_SNAPSHOTRECORD_H

#include "common/Attribute.h"
#include "common/Entry.h"
#include "common/Variant.h"

#include <cstddef>

namespace cali
{

class SnapshotView
{
    const Entry* m_data;
    std::size_t  m_len;

public:
    SnapshotView() : m_data(0), m_len(0) {}
    SnapshotView(std::size_t len, const Entry* data) : m_data(data), m_len(len) {}
    /// A view of one entry (which must outlive the view).
    SnapshotView(const Entry& e) : m_data(&e), m_len(1) {}

    typedef const Entry* iterator;

    iterator    begin() const { return m_data; }
    iterator    end() const { return m_data + m_len; }
    std::size_t size() const { return m_len; }
    bool        empty() const { return m_len == 0; }
    const Entry& operator[](std::size_t i) const { return m_data[i]; }

    /// The innermost value of attr in the entries, as an entry, or empty.
    Entry get(const Attribute& attr) const
    {
        for (std::size_t i = 0; i < m_len; ++i) {
            Entry e = m_data[i].get(attr);
            if (!e.empty())
                return e;
        }
        return Entry();
    }
};

class SnapshotBuilder
{
    Entry*      m_data;
    std::size_t m_capacity;
    std::size_t m_len;
    std::size_t m_skipped;

public:
    SnapshotBuilder() : m_data(0), m_capacity(0), m_len(0), m_skipped(0) {}
    SnapshotBuilder(std::size_t capacity, Entry* data) : m_data(data), m_capacity(capacity), m_len(0), m_skipped(0)
    {}

    std::size_t capacity() const { return m_capacity; }
    std::size_t size() const { return m_len; }
    /// Entries that did not fit.
    std::size_t num_skipped() const { return m_skipped; }

    void append(const Entry& e)
    {
        if (m_len < m_capacity)
            m_data[m_len++] = e;
        else
            ++m_skipped;
    }

    void append(std::size_t n, const Entry* entries)
    {
        for (std::size_t i = 0; i < n; ++i)
            append(entries[i]);
    }

    void append(const Attribute& attr, const Variant& val) { append(Entry(attr, val)); }

    void append(SnapshotView view) { append(view.size(), view.begin()); }

    SnapshotView view() const { return SnapshotView(m_len, m_data); }
};

template <std::size_t N>
class FixedSizeSnapshotRecord
{
    Entry           m_data[N];
    SnapshotBuilder m_builder;

    FixedSizeSnapshotRecord(const FixedSizeSnapshotRecord&);
    FixedSizeSnapshotRecord& operator=(const FixedSizeSnapshotRecord&);

public:
    FixedSizeSnapshotRecord() : m_builder(N, m_data) {}

    SnapshotBuilder& builder() { return m_builder; }
    SnapshotView     view() const { return m_builder.view(); }

    void reset() { m_builder = SnapshotBuilder(N, m_data); }
};

} // namespace cali

#endif
