package benchhost

import (
	"math"
	"slices"
)

// Median is the middle of xs, the upper one of the two for an even count,
// so that it is always a measured value; 0 for none.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// Round3 is x to three decimals, as the commands' JSON and tables give
// their figures.
func Round3(x float64) float64 { return math.Round(x*1000) / 1000 }
