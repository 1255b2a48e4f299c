// Caliper: cali::CaliperMetadataAccessInterface (drop-in for the
// reference's caliper/common/CaliperMetadataAccessInterface.h): what code
// that reads records needs of the runtime (or of a reader's database):
// nodes and attributes by id, attributes by name, and the run metadata.
#ifndef CALI_COMMON_CALIPERMETADATAACCESSINTERFACE_H
#define CALI_COMMON_CALIPERMETADATAACCESSINTERFACE_H

#include "Attribute.h"
#include "Entry.h"
#include "Node.h"
#include "Variant.h"
#include "cali_types.h"

#include <string>
#include <vector>

namespace cali
{

class CaliperMetadataAccessInterface
{
public:
    virtual Node*      node(cali_id_t id) const                     = 0;
    virtual Attribute  get_attribute(cali_id_t id) const            = 0;
    virtual Attribute  get_attribute(const std::string& name) const = 0;

    virtual std::vector<Attribute> get_all_attributes() const = 0;

    virtual Attribute create_attribute(const std::string& name, cali_attr_type type, int prop = CALI_ATTR_DEFAULT,
                                       int meta = 0, const Attribute* meta_attr = 0, const Variant* meta_data = 0) = 0;

    /// The run metadata (globals).
    virtual std::vector<Entry> get_globals() = 0;

    /// The attributes with all of the property bits prop.
    std::vector<Attribute> find_attributes_with_prop(int prop) const
    {
        std::vector<Attribute> all = get_all_attributes();
        std::vector<Attribute> found;
        for (std::size_t i = 0; i < all.size(); ++i)
            if ((all[i].properties() & prop) == prop)
                found.push_back(all[i]);
        return found;
    }

    /// The attributes that carry metadata attribute meta.
    std::vector<Attribute> find_attributes_with(const Attribute& meta) const
    {
        std::vector<Attribute> all = get_all_attributes();
        std::vector<Attribute> found;
        for (std::size_t i = 0; i < all.size(); ++i)
            if (!all[i].get(meta).empty())
                found.push_back(all[i]);
        return found;
    }

    virtual ~CaliperMetadataAccessInterface() {}
};

} // namespace cali

#endif
