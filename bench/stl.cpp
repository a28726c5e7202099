/*
 * The C++ file of the bench corpus (bench/corpus.sh builds it with g++ -O2 -g
 * -fno-omit-frame-pointer and perf records it with -g): a program that spends its time
 * in libstdc++ the way ordinary C++ does — std::sort of strings and structs, std::map and
 * std::unordered_map inserts and lookups, std::ostringstream formatting — so its profile
 * has many template instantiations, libstdc++.so frames and deep inlined call sites
 * rather than one hot loop. Usage: stl [CPU-SECONDS] (default 2): its own CPU time, so
 * that a busy machine does not shorten the profile.
 */
#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <map>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

namespace corpus {

struct Row {
	std::string key;
	long value;
	double weight;
	bool operator<(const Row &o) const
	{
		return key < o.key || (key == o.key && value < o.value);
	}
};

static unsigned long rng = 88172645463325252ul;
static unsigned long next()
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

__attribute__((noinline)) std::vector<Row> make_rows(size_t n)
{
	std::vector<Row> v;
	v.reserve(n);
	for (size_t i = 0; i < n; i++) {
		std::ostringstream os;
		os << "key-" << (next() % 5000) << '-' << std::hex << (next() & 0xffff);
		v.push_back(Row{ os.str(), (long)(next() % 100000), (double)(next() % 1000) / 7.0 });
	}
	return v;
}

__attribute__((noinline)) long sort_rows(std::vector<Row> &v)
{
	std::sort(v.begin(), v.end());
	std::stable_sort(v.begin(), v.end(),
			 [](const Row &a, const Row &b) { return a.weight < b.weight; });
	return v.front().value + v.back().value;
}

__attribute__((noinline)) long map_rows(const std::vector<Row> &v)
{
	std::map<std::string, long> m;
	for (const Row &r : v)
		m[r.key] += r.value;
	long sum = 0;
	for (const Row &r : v) {
		auto it = m.find(r.key);
		if (it != m.end())
			sum += it->second;
	}
	return sum;
}

__attribute__((noinline)) long hash_rows(const std::vector<Row> &v)
{
	std::unordered_map<std::string, double> h;
	for (const Row &r : v)
		h[r.key] += r.weight;
	double sum = 0;
	for (const auto &kv : h)
		sum += kv.second;
	return (long)sum;
}

__attribute__((noinline)) size_t report(const std::vector<Row> &v)
{
	std::ostringstream os;
	for (size_t i = 0; i < v.size(); i += 3)
		os << v[i].key << '\t' << v[i].value << '\t' << v[i].weight << '\n';
	return os.str().size();
}

} // namespace corpus

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 2.0;
	std::clock_t t0 = std::clock();
	volatile long sink = 0;

	while ((double)(std::clock() - t0) / CLOCKS_PER_SEC < secs) {
		std::vector<corpus::Row> v = corpus::make_rows(20000);
		sink = sink + corpus::sort_rows(v);
		sink = sink + corpus::map_rows(v);
		sink = sink + corpus::hash_rows(v);
		sink = sink + (long)corpus::report(v);
	}
	return sink == 42;
}
