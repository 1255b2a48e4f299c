// Calls the shared library's hot function (see hotlib.cpp); never calls
// Caliper.
#include <cstdio>

namespace hot {
void leaf(double seconds);
}

int main()
{
    hot::leaf(0.5);
    std::puts("library done");
    return 0;
}
