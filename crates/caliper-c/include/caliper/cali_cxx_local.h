// Caliper: CALI_CXX_LOCAL, which marks the members of the header-only C++
// classes (Annotation.h, ChannelController.h, ConfigManager.h) hidden.
//
// libcaliper also exports members of these names, those of the reference's
// classes (for programs built against the reference's headers, whose
// classes have other layouts). A shared library built against these
// headers may call its copy of a member out of line, through its PLT:
// hidden, the call stays in the library, instead of reaching libcaliper's
// member of the same name, which would read the object in the
// reference's layout. The classes themselves keep the default visibility,
// so that a program's own classes may hold or derive from them.
#ifndef CALI_CALI_CXX_LOCAL_H
#define CALI_CALI_CXX_LOCAL_H

#if defined(__GNUC__)
#define CALI_CXX_LOCAL __attribute__((visibility("hidden")))
#else
#define CALI_CXX_LOCAL
#endif

#endif
