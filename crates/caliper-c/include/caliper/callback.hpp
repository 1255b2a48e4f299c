// Caliper: util::callback, a list of functions called together (drop-in
// for the reference's callback.hpp, the type of its channel events).
#ifndef CALI_CALLBACK_HPP
#define CALI_CALLBACK_HPP

#include <functional>
#include <vector>

namespace util
{

template <typename Signature>
class callback;

template <typename... Args>
class callback<void(Args...)>
{
    std::vector<std::function<void(Args...)>> m_cbvec;

public:
    /// Adds f to the functions called, after those added before.
    void connect(const std::function<void(Args...)>& f) { m_cbvec.push_back(f); }

    /// Calls every function added, in order.
    void operator()(Args... args) const
    {
        for (std::size_t i = 0; i < m_cbvec.size(); ++i)
            m_cbvec[i](args...);
    }

    bool empty() const { return m_cbvec.empty(); }
};

} // namespace util

#endif
