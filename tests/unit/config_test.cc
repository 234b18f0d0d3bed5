// Text forms of the Config enums (flags, config files, benchmark records all
// spell them through these) and the Config defaults the contract documents.
#include <gtest/gtest.h>

#include "kvcg/config.h"

namespace kvcg {
namespace {

TEST(ParseBackend, AcceptsExactNames) {
  Backend b = Backend::kCpu;
  EXPECT_TRUE(ParseBackend("auto", &b));
  EXPECT_EQ(b, Backend::kAuto);
  EXPECT_TRUE(ParseBackend("gpu", &b));
  EXPECT_EQ(b, Backend::kGpu);
  EXPECT_TRUE(ParseBackend("cpu", &b));
  EXPECT_EQ(b, Backend::kCpu);
}

TEST(ParseBackend, RejectsEverythingElseAndLeavesOutputAlone) {
  for (const char* text : {"", "CPU", "Gpu", "cpu ", " cpu", "cuda", "au", "autox", "gpu\n"}) {
    Backend b = Backend::kGpu;
    EXPECT_FALSE(ParseBackend(text, &b)) << '"' << text << '"';
    EXPECT_EQ(b, Backend::kGpu) << '"' << text << '"';
  }
  Backend b = Backend::kGpu;
  EXPECT_FALSE(ParseBackend(std::string("cpu\0", 4), &b)) << "embedded NUL";
}

TEST(ParseLayout, AcceptsExactNamesRejectsOthers) {
  Layout l = Layout::kGeneral;
  EXPECT_TRUE(ParseLayout("fixed8", &l));
  EXPECT_EQ(l, Layout::kFixed8);
  EXPECT_TRUE(ParseLayout("general", &l));
  EXPECT_EQ(l, Layout::kGeneral);
  for (const char* text : {"", "fixed", "fixed16", "Fixed8", "general ", "8"}) {
    Layout out = Layout::kFixed8;
    EXPECT_FALSE(ParseLayout(text, &out)) << '"' << text << '"';
    EXPECT_EQ(out, Layout::kFixed8);
  }
}

TEST(ParseMode, AcceptsExactNamesRejectsOthers) {
  Mode m = Mode::kCanonical;
  EXPECT_TRUE(ParseMode("kvcg", &m));
  EXPECT_EQ(m, Mode::kKvcg);
  EXPECT_TRUE(ParseMode("hot-only", &m));
  EXPECT_EQ(m, Mode::kHotOnly);
  EXPECT_TRUE(ParseMode("canonical", &m));
  EXPECT_EQ(m, Mode::kCanonical);
  for (const char* text : {"", "KVCG", "gpu_only", "gpuonly", "cpu", "hot_only", "Canonical"}) {
    Mode out = Mode::kKvcg;
    EXPECT_FALSE(ParseMode(text, &out)) << '"' << text << '"';
    EXPECT_EQ(out, Mode::kKvcg);
  }
  // Names round-trip.
  for (Mode mode : {Mode::kCanonical, Mode::kKvcg, Mode::kHotOnly}) {
    Mode back = Mode::kKvcg;
    ASSERT_TRUE(ParseMode(ModeName(mode), &back)) << ModeName(mode);
    EXPECT_EQ(back, mode);
  }
}

TEST(ParseMode, PaperNamesAreDeprecatedSpellings) {
  Mode m = Mode::kKvcg;
  EXPECT_TRUE(ParseMode("cpu-only", &m));
  EXPECT_EQ(m, Mode::kHotOnly);
  EXPECT_TRUE(ParseMode("gpu-only", &m));
  EXPECT_EQ(m, Mode::kCanonical);
  EXPECT_STREQ(ModeReplacement("gpu-only"), "canonical");
  EXPECT_STREQ(ModeReplacement("cpu-only"), "hot-only");
  EXPECT_EQ(ModeReplacement("kvcg"), nullptr);
  EXPECT_EQ(ModeReplacement("canonical"), nullptr);
}

TEST(ParseRouterModel, AcceptsExactNamesRejectsOthers) {
  RouterModel m = RouterModel::kHistogram;
  EXPECT_TRUE(ParseRouterModel("heavy-hitters", &m));
  EXPECT_EQ(m, RouterModel::kHeavyHitters);
  EXPECT_TRUE(ParseRouterModel("histogram", &m));
  EXPECT_EQ(m, RouterModel::kHistogram);
  for (const char* text : {"", "Histogram", "heavy_hitters", "heavyhitters", "hh", "histogram "}) {
    RouterModel out = RouterModel::kHeavyHitters;
    EXPECT_FALSE(ParseRouterModel(text, &out)) << '"' << text << '"';
    EXPECT_EQ(out, RouterModel::kHeavyHitters);
  }
}

TEST(RouterThreshold, ZeroMeansTheModelsDefault) {
  Config::RouterConfig r;
  r.model = RouterModel::kHistogram;
  EXPECT_EQ(RouterThreshold(r), 0.001);
  r.model = RouterModel::kHeavyHitters;
  EXPECT_EQ(RouterThreshold(r), 0.0);
  r.threshold = 0.25;
  EXPECT_EQ(RouterThreshold(r), 0.25);
  r.model = RouterModel::kHistogram;
  EXPECT_EQ(RouterThreshold(r), 0.25);
}

// Every name a *Name function prints parses back to the same value.
TEST(EnumNames, RoundTrip) {
  for (Backend b : {Backend::kAuto, Backend::kGpu, Backend::kCpu}) {
    Backend out = b == Backend::kCpu ? Backend::kGpu : Backend::kCpu;
    EXPECT_TRUE(ParseBackend(BackendName(b), &out)) << BackendName(b);
    EXPECT_EQ(out, b);
  }
  for (Layout l : {Layout::kGeneral, Layout::kFixed8}) {
    Layout out = l == Layout::kGeneral ? Layout::kFixed8 : Layout::kGeneral;
    EXPECT_TRUE(ParseLayout(LayoutName(l), &out)) << LayoutName(l);
    EXPECT_EQ(out, l);
  }
  for (Mode m : {Mode::kCanonical, Mode::kKvcg, Mode::kHotOnly}) {
    Mode out = m == Mode::kKvcg ? Mode::kHotOnly : Mode::kKvcg;
    EXPECT_TRUE(ParseMode(ModeName(m), &out)) << ModeName(m);
    EXPECT_EQ(out, m);
  }
  for (RouterModel m : {RouterModel::kHistogram, RouterModel::kHeavyHitters}) {
    RouterModel out = m == RouterModel::kHistogram ? RouterModel::kHeavyHitters : RouterModel::kHistogram;
    EXPECT_TRUE(ParseRouterModel(RouterModelName(m), &out)) << RouterModelName(m);
    EXPECT_EQ(out, m);
  }
}

TEST(Config, DocumentedDefaults) {
  const Config c;
  EXPECT_EQ(c.backend, Backend::kAuto);
  EXPECT_EQ(c.layout, Layout::kGeneral);
  EXPECT_EQ(c.max_key_bytes, 64u * 1024);
  EXPECT_EQ(c.max_value_bytes, 512ull * 1024 * 1024) << "Redis's proto-max-bulk-len";
  EXPECT_EQ(c.max_keys, 0u) << "unlimited";
  EXPECT_EQ(c.max_memory_bytes, 0u) << "unlimited";
  EXPECT_EQ(c.hash, &Xxh3Hash);
  EXPECT_EQ(c.router.model, RouterModel::kHeavyHitters);
  EXPECT_EQ(c.router.threshold, 0.0) << "the model's default";
  EXPECT_EQ(c.router.hot_keys, 0u) << "the hot cache's capacity";
  EXPECT_EQ(c.router.bins, 10000u);
  EXPECT_EQ(c.router.sample_rate, 0.01);
  EXPECT_EQ(c.router.min_hot_share, 0.05);
}

}  // namespace
}  // namespace kvcg
