// A C++ program that runs out of memory the standard way: std::bad_alloc from new and from a
// container, caught; std::nothrow new gives nullptr; an aligned type; exceptions in threads.
#include <cstdint>
#include <cstdio>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

struct alignas(256) Block {
    char bytes[256];
};

int main()
{
    int caught = 0;
    try {
        volatile size_t huge = (size_t)1 << 62;
        char *p = new char[huge];
        p[0] = 1;
    } catch (const std::bad_alloc &) {
        caught++;
    }
    try {
        std::vector<double> v;
        v.reserve(v.max_size());
    } catch (const std::bad_alloc &) {
        caught++;
    } catch (const std::length_error &) {
        caught++;
    }
    char *none = new (std::nothrow) char[(size_t)1 << 62];
    std::vector<Block *> blocks;
    for (int i = 0; i < 64; i++)
        blocks.push_back(new Block);
    int aligned = 0;
    for (Block *b : blocks) {
        aligned += reinterpret_cast<uintptr_t>(b) % 256 == 0;
        delete b;
    }
    int thread_caught = 0;
    std::vector<std::thread> threads;
    std::vector<int> results(4);
    for (int t = 0; t < 4; t++)
        threads.emplace_back([&results, t] {
            try {
                std::string s(1000 + t, 'x');
                throw std::runtime_error(s);
            } catch (const std::runtime_error &e) {
                results[t] = (int)std::string(e.what()).size();
            }
        });
    for (auto &th : threads)
        th.join();
    for (int r : results)
        thread_caught += r >= 1000;
    printf("caught=%d nothrow_null=%d aligned=%d/64 thread_exceptions=%d\n", caught,
           none == nullptr, aligned, thread_caught);
    return 0;
}
