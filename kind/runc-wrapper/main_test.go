package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestMain(m *testing.M) {
	// Keep the tests' change log out of /var/log.
	dir, err := os.MkdirTemp("", "runc-wrapper-test")
	if err != nil {
		panic(err)
	}
	os.Setenv("NUMA_TESTKIT_RUNC_LOG", filepath.Join(dir, "changes.log"))
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func TestSplitCommand(t *testing.T) {
	cases := []struct {
		args    []string
		command string
		rest    []string
	}{
		{[]string{"create", "--bundle", "/b", "id"}, "create", []string{"--bundle", "/b", "id"}},
		{[]string{"--root", "/run/runc", "--log", "/l", "exec", "-p", "/p", "id"}, "exec", []string{"-p", "/p", "id"}},
		{[]string{"--systemd-cgroup", "run", "id"}, "run", []string{"id"}},
		{[]string{"--root=/r", "update", "--resources", "-", "id"}, "update", []string{"--resources", "-", "id"}},
		{[]string{"--version"}, "", nil},
	}
	for _, c := range cases {
		command, rest := splitCommand(c.args)
		if command != c.command || !reflect.DeepEqual(rest, c.rest) {
			t.Errorf("splitCommand(%v) = %q %v, want %q %v", c.args, command, rest, c.command, c.rest)
		}
	}
}

func TestFlagValue(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--bundle", "/b", "id"}, "/b"},
		{[]string{"-b", "/b", "id"}, "/b"},
		{[]string{"--bundle=/b", "id"}, "/b"},
		{[]string{"-b=/b", "id"}, "/b"},
		{[]string{"id"}, ""},
		{[]string{"--", "--bundle", "/b"}, ""},
	}
	for _, c := range cases {
		if got := flagValue(c.args, "--bundle", "-b"); got != c.want {
			t.Errorf("flagValue(%v) = %q, want %q", c.args, got, c.want)
		}
	}
}

func TestFitCapabilities(t *testing.T) {
	process := map[string]any{"capabilities": map[string]any{
		"bounding":  []any{"CAP_CHOWN", "CAP_SYS_RESOURCE", "CAP_NEW_UNKNOWN"},
		"effective": []any{"CAP_SYS_RESOURCE"},
	}}
	allowed := map[string]bool{"CAP_CHOWN": true}
	if !fitCapabilities(process, allowed) {
		t.Fatal("fitCapabilities reported no change")
	}
	caps := process["capabilities"].(map[string]any)
	// Unknown names are left for runc to judge; known ones outside the set are dropped.
	if want := []any{"CAP_CHOWN", "CAP_NEW_UNKNOWN"}; !reflect.DeepEqual(caps["bounding"], want) {
		t.Errorf("bounding = %v, want %v", caps["bounding"], want)
	}
	if want := []any{}; !reflect.DeepEqual(caps["effective"], want) {
		t.Errorf("effective = %v, want %v", caps["effective"], want)
	}
	if fitCapabilities(process, allowed) {
		t.Error("a second pass changed an already fitting spec")
	}
}

func ownOOMScoreAdj(t *testing.T) int {
	raw, err := os.ReadFile("/proc/self/oom_score_adj")
	if err != nil {
		t.Fatal(err)
	}
	own, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	return own
}

func TestFitOOMScoreAdj(t *testing.T) {
	own := ownOOMScoreAdj(t)
	low := map[string]any{"oomScoreAdj": float64(own - 1)}
	if !fitOOMScoreAdj(low) || low["oomScoreAdj"] != own {
		t.Errorf("oomScoreAdj %d below own %d: got %v", own-1, own, low["oomScoreAdj"])
	}
	high := map[string]any{"oomScoreAdj": float64(own + 1)}
	if fitOOMScoreAdj(high) || high["oomScoreAdj"] != float64(own+1) {
		t.Errorf("oomScoreAdj above own was changed: %v", high["oomScoreAdj"])
	}
	if fitOOMScoreAdj(map[string]any{}) {
		t.Error("a spec without oomScoreAdj was changed")
	}
}

// TestAdjustBundle runs the create path on a real bundle directory: the result keeps only
// capabilities of this process's bounding set and an oomScoreAdj it may set.
func TestAdjustBundle(t *testing.T) {
	dir := t.TempDir()
	all := make([]any, 0, len(capNames))
	for _, name := range capNames {
		all = append(all, name)
	}
	spec := map[string]any{
		"ociVersion": "1.0.2",
		"process": map[string]any{
			"args":         []any{"sleep", "1"},
			"oomScoreAdj":  -1000,
			"capabilities": map[string]any{"bounding": all, "permitted": all},
		},
	}
	raw, _ := json.Marshal(spec)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := adjust([]string{"--root", "/run/x", "create", "--bundle", dir, "id"}); err != nil {
		t.Fatal(err)
	}
	raw, _ = os.ReadFile(filepath.Join(dir, "config.json"))
	var got map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	allowed, err := boundingSet()
	if err != nil {
		t.Fatal(err)
	}
	process := got["process"].(map[string]any)
	for set, list := range process["capabilities"].(map[string]any) {
		kept := map[string]bool{}
		for _, c := range list.([]any) {
			kept[c.(string)] = true
		}
		for _, name := range capNames {
			if kept[name] != allowed[name] {
				t.Errorf("%s: %s kept=%v, in bounding set=%v", set, name, kept[name], allowed[name])
			}
		}
	}
	if adj := int(process["oomScoreAdj"].(float64)); adj < ownOOMScoreAdj(t) && ownOOMScoreAdj(t) > -1000 {
		t.Errorf("oomScoreAdj %d is below this process's own", adj)
	}
}
