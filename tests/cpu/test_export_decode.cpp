// The export buckets decode by N_kv as well as N_q (issue 18 item 6): a tuned 1-token step against
// an 8k cache and one against a 1k cache are two entries, each matched by its own cache length; the
// CSV and JSON carry the bucket and an export from before it reads as matching every N_kv; the
// header's lookup takes N_kv.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "codegen/compile_pool.hpp"
#include "library/bundle_builder.hpp"
#include "library/tuned_table.hpp"
#include "report/best_table.hpp"
#include "report/export.hpp"

namespace attn {
namespace {

record decode_best(int64_t kv_len, int splits) {
  record r;
  r.device = {"NVIDIA H200", "sm_90a", 9, 0, 132, "13.0", "13.0"};
  r.family = "fa2";
  r.shape.batch = 8, r.shape.heads = 32, r.shape.kv_heads = 8, r.shape.q_len = 1, r.shape.kv_len = kv_len;
  r.shape.head_dim = 128;
  r.config = {32, 64, 2, 2, 0, splits, 1};
  r.status = status::ok;
  r.median_ms = 0.1;
  r.tflops = 10;
  r.rank = 1;
  return r;
}

problem step(int64_t kv_len) {
  problem p = decode_best(kv_len, 1).shape;
  p.batch = 3;  // another batch: the export's key leaves it out
  return p;
}

std::vector<export_entry> two_caches() { return export_entries(best_table({decode_best(8192, 4), decode_best(1024, 1)})); }

TEST(export_decode, each_cache_length_has_its_bucket) {
  const auto entries = two_caches();
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].kv_min, 4096);
  EXPECT_EQ(entries[0].kv_max, 8192);
  EXPECT_EQ(entries[1].kv_min, 512);
  EXPECT_EQ(entries[1].kv_max, 1024);
  EXPECT_TRUE(export_key_matches(entries[0], step(6000)));
  EXPECT_FALSE(export_key_matches(entries[1], step(6000)));
  EXPECT_TRUE(export_key_matches(entries[1], step(700)));
  EXPECT_FALSE(export_key_matches(entries[0], step(20000)));
  EXPECT_FALSE(export_key_matches(entries[1], step(20000)));
}

TEST(export_decode, the_csv_and_json_carry_the_bucket) {
  for (const auto& back : {read_export_csv(export_csv(two_caches()), "e.csv"), read_export_json(export_json(two_caches()), "e.json")}) {
    ASSERT_EQ(back.size(), 2u);
    EXPECT_EQ(back[0].kv_min, 4096);
    EXPECT_EQ(back[0].kv_max, 8192);
    EXPECT_EQ(back[0].config.splits, 4);
    EXPECT_EQ(back[1].kv_max, 1024);
  }
}

TEST(export_decode, an_export_from_before_the_bucket_matches_every_cache) {
  std::string csv = export_csv(two_caches());
  for (const char* column : {"kv_min_exclusive,kv_max,", "4096,8192,", "512,1024,"}) {
    const size_t at = csv.find(column);
    ASSERT_NE(at, std::string::npos) << column;
    csv.erase(at, std::string(column).size());
  }
  const auto back = read_export_csv(csv, "old.csv");
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].kv_min, 0);
  EXPECT_EQ(back[0].kv_max, INT64_MAX);
  EXPECT_TRUE(export_key_matches(back[0], step(20000)));
  nlohmann::json doc = nlohmann::json::parse(export_json(two_caches()));
  for (auto& e : doc["entries"]) e.erase("kv_min_exclusive"), e.erase("kv_max");
  EXPECT_EQ(read_export_json(doc.dump(), "old.json").at(1).kv_max, INT64_MAX);
}

// The bucket's key has no head counts: the packed, split winner of a GQA step meets an MHA step
// of the same bucket, which refuses packing; the library then runs the same tile unpacked and
// unsplit (a bucket choice still), not the generic fallback.
TEST(export_decode, a_packed_winner_serves_an_mha_shape_as_its_plain_tile) {
  const tuned_table table = tuned_table::parse(export_csv(two_caches()), "e.csv");
  problem mha = step(6000);
  mha.kv_heads = mha.heads;
  const auto candidates = table.candidates(decode_best(8192, 4).device, mha);
  ASSERT_GE(candidates.size(), 3u);
  EXPECT_EQ(candidates[0].config, (tile_config{32, 64, 2, 2, 0, 4, 1}));
  EXPECT_EQ(candidates[1].config, (tile_config{32, 64, 2, 2, 0, 1, 0}));
  EXPECT_EQ(candidates[1].source, choice_source::bucket);
  const tuned_choice c = choose_config(table, decode_best(8192, 4).device, limits_for_arch("sm_90a"), mha);
  EXPECT_EQ(c.source, choice_source::bucket);
  EXPECT_EQ(c.config, (tile_config{32, 64, 2, 2, 0, 1, 0}));
  // The GQA step itself still runs the packed, split winner.
  EXPECT_EQ(choose_config(table, decode_best(8192, 4).device, limits_for_arch("sm_90a"), step(6000)).config,
            (tile_config{32, 64, 2, 2, 0, 4, 1}));
}

// A bundle of that export holds the packed, split winner (built for a GQA problem: the bucket's
// key has one head) and its plain tile, so neither is compiled with NVRTC on first use.
TEST(export_decode, a_bundle_holds_the_packed_winner_and_its_plain_tile) {
  const tuned_table table = tuned_table::parse(export_csv(two_caches()), "e.csv");
  std::vector<std::string> skipped;
  const auto targets = bundle_targets(table, "sm_90a", skipped);
  EXPECT_TRUE(skipped.empty()) << skipped.front();
  auto has = [&](const tile_config& c) {
    for (const auto& t : targets)
      if (t.config == c) return true;
    return false;
  };
  EXPECT_TRUE(has(tile_config{32, 64, 2, 2, 0, 4, 1}));
  EXPECT_TRUE(has(tile_config{32, 64, 2, 2, 0, 1, 0}));
  EXPECT_TRUE(has(tile_config{32, 64, 2, 2, 0, 1, 1}));  // the 1k cache's winner: packed, not split
}

TEST(export_decode, the_header_looks_up_by_the_cache_length) {
  const std::string header = export_header(two_caches(), "decode.csv");
  EXPECT_NE(header.find("long long seq_len,\n                     long long kv_len, bool* fell_back = nullptr"),
            std::string::npos)
      << header;
  EXPECT_NE(header.find("1, 4096, 8192LL"), std::string::npos) << header;  // seq (0, 1], kv (4096, 8192]
  EXPECT_NE(header.find("kv_len > e->kv_min_exclusive && kv_len <= e->kv_max"), std::string::npos);
  EXPECT_NE(header.find("seq_len, seq_len, fell_back"), std::string::npos) << "the self-attention lookup";
}

}  // namespace
}  // namespace attn
