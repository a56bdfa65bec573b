package bulk

import "testing"

// The tasks' ranges cover every index once, in order, each shard within
// one of the others' size, whatever the total and the count.
func TestBulkRangesPartition(t *testing.T) {
	for _, total := range []int64{0, 1, 2, 7, 25, 1000, 1<<40 + 3} {
		for _, count := range []int{1, 2, 3, 7, 64, 10000} {
			var next, least, most int64 = 0, -1, 0
			for k := range count {
				s, e := Task{Index: k, Count: count}.Range(total)
				if s != next || e < s {
					t.Fatalf("total %d, task %d of %d: [%d, %d), want it to begin at %d", total, k, count, s, e, next)
				}
				if least < 0 || e-s < least {
					least = e - s
				}
				most = max(most, e-s)
				next = e
			}
			if next != total || most-least > 1 {
				t.Errorf("total %d over %d tasks: covered [0, %d), sizes %d to %d", total, count, next, least, most)
			}
		}
	}
}
