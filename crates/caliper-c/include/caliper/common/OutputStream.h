// Caliper: cali::OutputStream (drop-in for the reference's
// caliper/common/OutputStream.h): where an output goes: stdout, stderr, a
// file (opened on first use) or a stream of the program's. Copies share
// the stream.
#ifndef CALI_COMMON_OUTPUTSTREAM_H
#define CALI_COMMON_OUTPUTSTREAM_H

#include "CaliperMetadataAccessInterface.h"
#include "Entry.h"
#include "Log.h"

#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

namespace cali
{

class OutputStream
{
public:
    enum StreamType { None, StdOut, StdErr, File, User };

private:
    struct Impl {
        StreamType    type;
        std::string   filename;
        std::ofstream file;
        std::ostream* user;
        std::ostream  discard; // a stream without a buffer: writes go nowhere

        Impl() : type(None), user(0), discard(0) {}
    };

    std::shared_ptr<Impl> mP;

public:
    OutputStream() : mP(new Impl) {}

    StreamType type() const { return mP->type; }
    explicit operator bool() const { return mP->type != None; }

    /// The stream; for a file, opened (truncated) on the first call. A file
    /// that cannot be opened is logged, and its output discarded.
    std::ostream* stream()
    {
        switch (mP->type) {
        case StdOut:
            return &std::cout;
        case StdErr:
            return &std::cerr;
        case User:
            return mP->user;
        case File:
            if (!mP->file.is_open()) {
                mP->file.open(mP->filename.c_str());
                if (!mP->file.is_open()) {
                    Log(0).stream() << "Could not open output stream " << mP->filename << std::endl;
                    mP->type = None;
                    return &mP->discard;
                }
            }
            return &mP->file;
        default:
            return &mP->discard;
        }
    }

    void set_stream(StreamType type)
    {
        mP.reset(new Impl);
        mP->type = type;
    }

    void set_stream(std::ostream* os)
    {
        mP.reset(new Impl);
        mP->type = os ? User : None;
        mP->user = os;
    }

    /// "stdout", "stderr", "none", or a file name.
    void set_filename(const char* filename)
    {
        mP.reset(new Impl);
        if (!filename || std::strcmp(filename, "none") == 0)
            return;
        if (std::strcmp(filename, "stdout") == 0) {
            mP->type = StdOut;
        } else if (std::strcmp(filename, "stderr") == 0) {
            mP->type = StdErr;
        } else {
            mP->type     = File;
            mP->filename = filename;
        }
    }

    /// A file name pattern whose %attribute% fields are filled in with
    /// that attribute's value in rec ("" if it has none).
    void set_filename(const char* formatstr, const CaliperMetadataAccessInterface& db, const std::vector<Entry>& rec)
    {
        std::string name;
        for (const char* p = formatstr ? formatstr : ""; *p; ++p) {
            const char* end = *p == '%' ? std::strchr(p + 1, '%') : 0;
            if (!end) {
                name += *p;
                continue;
            }
            Attribute attr = db.get_attribute(std::string(p + 1, end));
            for (std::size_t i = 0; attr && i < rec.size(); ++i) {
                Variant v = rec[i].value(attr.id());
                if (!v.empty()) {
                    name += v.to_string();
                    break;
                }
            }
            p = end;
        }
        set_filename(name.c_str());
    }
};

} // namespace cali

#endif
