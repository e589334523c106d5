package main

// Cpusets of real-kubelet nodes (docs/real-kubelet.md).

import "testing"

func TestFitList(t *testing.T) {
	have := []int{0, 1}
	for _, c := range []struct{ asked, want string }{
		{"0-1", "0-1"},     // all present: unchanged
		{"1", "1"},         // unchanged
		{"1-2", "1"},       // cut to the present ones
		{"0-15", "0-1"},    // the static policy's shared pool
		{"4,12", "0-1"},    // none present: all the machine has
		{"0,2,4-5", "0"},   // ids and ranges
		{"bogus", "bogus"}, // not a cpulist: left to runc
	} {
		if got := fitList(c.asked, have); got != c.want {
			t.Errorf("fitList(%q) = %q, want %q", c.asked, got, c.want)
		}
	}
}

func TestFitCpuset(t *testing.T) {
	res := map[string]any{"cpu": map[string]any{"cpus": "0-4095", "mems": "0"}}
	if !fitCpuset(res) {
		t.Fatal("a cpuset naming missing CPUs was not fitted")
	}
	cpus := res["cpu"].(map[string]any)["cpus"].(string)
	have, err := allowedList("Cpus_allowed_list")
	if err != nil || cpus != formatList(have) {
		t.Errorf("cpus = %q, want this process's %v (%v)", cpus, have, err)
	}
	if fitCpuset(map[string]any{"memory": map[string]any{}}) {
		t.Error("resources without cpu were changed")
	}
}
