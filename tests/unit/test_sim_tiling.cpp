// Tiling to fit on-chip memory (plan::tile_step, MISSION.md §2) and the simulator running the
// tiles, against tilings and schedules worked out by hand in the comments (times in µs).
#include <gtest/gtest.h>

#include <sstream>

#include "loom/sim.hpp"
#include "plan/tiling.hpp"
#include "sim_test_support.hpp"
#include "test_support.hpp"

using namespace loom;
using namespace loom::sim;
using loom::sim::fixtures::expect_schedule;

namespace {

// Takes the first candidate and keeps what it was shown.
class FirstCandidate final : public fixtures::RecordingPolicy {
 public:
  std::string_view name() const noexcept override { return "first"; }

 protected:
  std::size_t choose(std::span<const StepCandidate>) override { return 0; }
};

// One model: Step A (compute 9, memory 6, 150 bytes on chip) then Step B (compute 1, memory 1,
// 40 bytes); one request at time 0; the chip holds 100 bytes.
Workload big_step_workload() {
  Workload w;
  w.onchip_capacity_bytes = 100;
  w.models = {SimModel{"big", {SimStep{"A", 9, 6, 150, 0}, SimStep{"B", 1, 1, 40, 0}}}};
  w.requests = {SimRequest{"big", 0, 0}};
  return w;
}

std::vector<TraceEvent> on_track(const Timeline& timeline, const std::string& track) {
  std::vector<TraceEvent> events;
  for (const auto& e : timeline.events())
    if (e.track == track) events.push_back(e);
  return events;
}

}  // namespace

// 150 bytes on a 100-byte chip with 2 buffers: tiles of at most 50 bytes, ceil(150 / 50) = 3 of
// 50 bytes, each a third of the times. 101 bytes: ceil(101 / 50) = 3 tiles of 34, 34, 33 bytes.
// A Step that fits (100 bytes) is one tile, itself; 1 buffer allows tiles of the whole capacity.
TEST(SimTiling, TileStepSplitsAStepIntoTilesThatFit) {
  auto tiles = plan::tile_step(9, 6, 150, {100, 2});
  ASSERT_EQ(tiles.size(), 3u);
  for (const auto& tile : tiles) {
    EXPECT_EQ(tile.onchip_bytes, 50u);
    EXPECT_DOUBLE_EQ(tile.compute_us, 3);
    EXPECT_DOUBLE_EQ(tile.memory_us, 2);
  }
  tiles = plan::tile_step(3, 3, 101, {100, 2});
  ASSERT_EQ(tiles.size(), 3u);
  EXPECT_EQ(tiles[0].onchip_bytes, 34u);
  EXPECT_EQ(tiles[1].onchip_bytes, 34u);
  EXPECT_EQ(tiles[2].onchip_bytes, 33u);
  tiles = plan::tile_step(3, 2, 100, {100, 2});
  ASSERT_EQ(tiles.size(), 1u);
  EXPECT_EQ(tiles[0].onchip_bytes, 100u);
  EXPECT_EQ(plan::tile_step(3, 2, 1000, {0, 2}).size(), 1u);   // no capacity: nothing to fit
  EXPECT_EQ(plan::tile_step(9, 6, 150, {100, 1}).size(), 2u);  // ceil(150 / 100)
  loom::test_support::expect_error([] { plan::tile_step(1, 1, 10, {5, 0}); }, ErrorCode::invalid_argument, {"buffers"});
}

// Double buffering (tiles of 50 bytes):
//   A tile 1: memory [0,2]; compute [2,5]; holds 50 until 5.
//   A tile 2: memory from 2: 50 held + 50 fits 100: [2,4]; compute after tile 1: [5,8]; holds until 8.
//   A tile 3: memory from 4: 100 held, 50 more fit once tile 1 frees at 5: [5,7]; compute [8,11].
//   A as a whole: memory [0,7], compute [2,11]; the next scheduling point is 7.
//   B (decided at 7): tiles 2 and 3 hold 100 until 8, so B loads at [8,9]; compute [11,12].
// Makespan 12; compute busy 9 + 1 = 10, memory busy 6 + 1 = 7.
TEST(SimTiling, AStepLargerThanTheChipRunsAsTilesInOrder) {
  FirstCandidate policy;
  const SimResult r = simulate(big_step_workload(), policy);
  expect_schedule(r, {{0, 0, 0, 0, 7, 2, 11}, {0, 1, 7, 8, 9, 11, 12}});
  const auto& tiles = r.schedule[0].tiles;
  ASSERT_EQ(tiles.size(), 3u);
  const double expected[3][4] = {{0, 2, 2, 5}, {2, 4, 5, 8}, {5, 7, 8, 11}};
  for (std::size_t k = 0; k < 3; ++k) {
    SCOPED_TRACE("tile " + std::to_string(k));
    EXPECT_EQ(tiles[k].onchip_bytes, 50u);
    EXPECT_DOUBLE_EQ(tiles[k].memory_start_us, expected[k][0]);
    EXPECT_DOUBLE_EQ(tiles[k].memory_end_us, expected[k][1]);
    EXPECT_DOUBLE_EQ(tiles[k].compute_start_us, expected[k][2]);
    EXPECT_DOUBLE_EQ(tiles[k].compute_end_us, expected[k][3]);
  }
  EXPECT_TRUE(r.schedule[1].tiles.empty());
  EXPECT_DOUBLE_EQ(r.makespan_us, 12);
  EXPECT_DOUBLE_EQ(r.compute_busy_us, 10);
  EXPECT_DOUBLE_EQ(r.memory_busy_us, 7);
  EXPECT_DOUBLE_EQ(r.model_alone_us.at(0), 12);
  // The policy is shown what A needs on chip to start: one tile, not its whole working set.
  ASSERT_EQ(policy.decisions.size(), 2u);
  EXPECT_EQ(policy.decisions[0].candidates[0].working_set_bytes, 50u);
  EXPECT_EQ(policy.decisions[1].candidates[0].working_set_bytes, 40u);

  // The timeline shows each tile's phases; tile 3 waited 1 µs (from 4 to 5) for on-chip space.
  const auto memory = on_track(r.timeline, "sim:memory");
  ASSERT_EQ(memory.size(), 4u);
  EXPECT_EQ(memory[0].name, "big#0/0 tile 1/3");
  EXPECT_EQ(memory[2].name, "big#0/0 tile 3/3");
  EXPECT_DOUBLE_EQ(memory[2].start_us, 5);
  EXPECT_DOUBLE_EQ(memory[2].duration_us, 2);
  EXPECT_EQ(memory[2].args.at("tile"), "2");
  EXPECT_EQ(memory[2].args.at("tiles"), "3");
  EXPECT_EQ(memory[2].args.at("onchip_bytes"), "50");
  EXPECT_EQ(memory[2].args.at("capacity_wait_us"), "1");
  EXPECT_EQ(memory[3].name, "big#0/1");
  const auto compute = on_track(r.timeline, "sim:compute");
  ASSERT_EQ(compute.size(), 4u);
  EXPECT_EQ(compute[1].name, "big#0/0 tile 2/3");
  EXPECT_DOUBLE_EQ(compute[1].start_us, 5);
  EXPECT_DOUBLE_EQ(compute[1].duration_us, 3);

  // The result document lists the tiles.
  const std::string json = result_json(r, big_step_workload(), "fifo");
  EXPECT_NE(json.find("\"tiles\""), std::string::npos);
}

// One buffer (tiles of up to 100 bytes): ceil(150 / 100) = 2 tiles of 75 bytes, compute 4.5 and
// memory 3 each.
//   A tile 1: memory [0,3]; compute [3,7.5]; holds 75 until 7.5.
//   A tile 2: 75 + 75 > 100, so it loads once tile 1 frees: [7.5,10.5]; compute [10.5,15].
//   B (decided at 10.5): 75 + 40 > 100 until 15: memory [15,16]; compute [16,17].
// Makespan 17 against 12 with double buffering: no load overlaps a compute of the same Step.
TEST(SimTiling, OneBufferSerialisesTheTiles) {
  FirstCandidate policy;
  SimOptions options;
  options.tile_buffers = 1;
  const SimResult r = simulate(big_step_workload(), policy, options);
  expect_schedule(r, {{0, 0, 0, 0, 10.5, 3, 15}, {0, 1, 10.5, 15, 16, 16, 17}});
  ASSERT_EQ(r.schedule[0].tiles.size(), 2u);
  EXPECT_EQ(r.schedule[0].tiles[1].onchip_bytes, 75u);
  EXPECT_DOUBLE_EQ(r.schedule[0].tiles[1].memory_start_us, 7.5);
  EXPECT_DOUBLE_EQ(r.makespan_us, 17);
}

// Without a capacity nothing is tiled: A loads [0,6] and computes [6,15]; B loads [6,7] and
// computes [15,16].
TEST(SimTiling, NoCapacityNoTiles) {
  Workload w = big_step_workload();
  w.onchip_capacity_bytes = 0;
  FirstCandidate policy;
  const SimResult r = simulate(w, policy);
  expect_schedule(r, {{0, 0, 0, 0, 6, 6, 15}, {0, 1, 6, 6, 7, 15, 16}});
  EXPECT_TRUE(r.schedule[0].tiles.empty());
  SimOptions bad;
  bad.tile_buffers = 0;
  loom::test_support::expect_error([&] { simulate(w, policy, bad); }, ErrorCode::invalid_argument, {"tile_buffers"});
}

// A workload file may give a Step larger than the chip: it is read as written and tiled.
TEST(SimTiling, WorkloadFilesMayHoldStepsLargerThanTheChip) {
  std::istringstream in(R"({"onchip_capacity_bytes": 100,
    "models": [{"name": "big", "steps": [{"name": "A", "compute_us": 9, "memory_us": 6, "onchip_bytes": 150},
                                         {"name": "B", "compute_us": 1, "memory_us": 1, "onchip_bytes": 40}]}],
    "requests": [{"model": "big"}]})");
  const Workload w = parse_workload(in, "w.json");
  EXPECT_EQ(w.models.at(0).steps.at(0).onchip_bytes, 150u);
  FirstCandidate policy;
  EXPECT_DOUBLE_EQ(simulate(w, policy).makespan_us, 12);
}
