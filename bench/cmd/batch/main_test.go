package main

import (
	"fmt"
	"testing"
)

func TestParseSizes(t *testing.T) {
	got, err := parseSizes("10, 100,1000")
	if err != nil || fmt.Sprint(got) != "[10 100 1000]" {
		t.Errorf("parseSizes = %v, %v", got, err)
	}
	for _, bad := range []string{"", "1", "10,x", "10,10", "-5"} {
		if _, err := parseSizes(bad); err == nil {
			t.Errorf("parseSizes(%q) did not fail", bad)
		}
	}
	if roundUp(2000, 1000) != 2000 || roundUp(1, 1000) != 1000 || roundUp(1001, 100) != 1100 {
		t.Error("roundUp does not round up to a multiple")
	}
}
