// planning::PlanSearch's choice rule (schedules/planner.h): the cheapest
// candidate, each ranked at its estimate x (1 + rank_margin); candidates within
// the tie tolerance go to the double-buffered one, then to more cores, then to
// the first offered. Pure bookkeeping: no kernel is compiled.
#include <gtest/gtest.h>

#include "planner.h"

namespace spyre::testing {
namespace {

planning::Verdict verdict(double cycles, double rank_margin = 0.0, bool double_buffer = false, int cores = 1) {
    planning::Verdict v;
    v.legal = true;
    v.cycles = cycles;
    v.rank_margin = rank_margin;
    v.double_buffer = double_buffer;
    v.cores = cores;
    return v;
}

TEST(PlanSearch, TheCheapestWins) {
    planning::PlanSearch<int> search("test", 1e-3);
    search.offer(1, verdict(1000));
    search.offer(2, verdict(900));
    search.offer(3, verdict(950));
    EXPECT_EQ(search.best(), 2);
}

TEST(PlanSearch, ARankMarginMustBeBeatenByThatMuch) {
    // 1.5% ahead with a 2% margin loses (ranked at 985 x 1.02 = 1004.7)...
    planning::PlanSearch<int> close("test", 1e-3);
    close.offer(1, verdict(1000));
    close.offer(2, verdict(985, 0.02));
    EXPECT_EQ(close.best(), 1);
    // ... 10% ahead wins, and its verdict keeps its own estimate.
    planning::PlanSearch<int> clear("test", 1e-3);
    clear.offer(1, verdict(1000));
    clear.offer(2, verdict(900, 0.02));
    EXPECT_EQ(clear.best(), 2);
    EXPECT_DOUBLE_EQ(clear.verdict().cycles, 900);
}

TEST(PlanSearch, TiesGoToDoubleBufferingThenMoreCoresThenTheFirstOffered) {
    planning::PlanSearch<int> db("test", 1e-3);
    db.offer(1, verdict(1000, 0, false, 32));
    db.offer(2, verdict(1000.5, 0, true, 8));
    EXPECT_EQ(db.best(), 2);
    planning::PlanSearch<int> cores("test", 1e-3);
    cores.offer(1, verdict(1000, 0, true, 8));
    cores.offer(2, verdict(1000.5, 0, true, 32));
    EXPECT_EQ(cores.best(), 2);
    planning::PlanSearch<int> first("test", 1e-3);
    first.offer(1, verdict(1000.5, 0, true, 8));
    first.offer(2, verdict(1000, 0, true, 8));
    EXPECT_EQ(first.best(), 1);
}

TEST(PlanSearch, IllegalCandidatesAreNeverChosen) {
    planning::PlanSearch<int> search("test", 1e-3);
    planning::Verdict refused = verdict(10);
    refused.legal = false;
    search.offer(1, refused);
    EXPECT_FALSE(search.found());
    search.offer(2, verdict(1000));
    ASSERT_TRUE(search.found());
    EXPECT_EQ(search.best(), 2);
}

}  // namespace
}  // namespace spyre::testing
