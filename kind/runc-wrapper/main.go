// Command numa-testkit-runc runs the real runc after fitting the OCI spec to what this
// machine allows:
//
//   - capabilities outside this process's bounding set are removed (a container asking
//     for CAP_SYS_RESOURCE where the machine's bounding set lacks it fails with "unable
//     to apply caps: operation not permitted");
//   - an oomScoreAdj lower than this process's own is raised to it (lowering it needs
//     CAP_SYS_RESOURCE; the kubelet asks for -998 for sandboxes);
//   - (real-kubelet nodes, docs/real-kubelet.md) a cpuset naming CPUs or memory nodes
//     this machine lacks - a kubelet that believes a profile's topology pins containers
//     to them - is cut to the ones it has, or to all of them when none is left; on
//     create/run (linux.resources.cpu) and on `update --resources FILE|-`.
//
// It edits config.json of the bundle on create/run and the process spec on exec, logs
// every change to /var/log/numa-testkit-runc.log ($NUMA_TESTKIT_RUNC_LOG; not stderr: on create, runc's stderr
// is the container's), and execs the real runc with the unchanged arguments.
// The real runc is $NUMA_TESTKIT_REAL_RUNC, else the first of /usr/sbin/runc,
// /usr/bin/runc, /usr/local/sbin/runc that is not this program.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// capNames lists the Linux capabilities by number (include/uapi/linux/capability.h).
var capNames = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID",
	"CAP_KILL", "CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP", "CAP_LINUX_IMMUTABLE",
	"CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST", "CAP_NET_ADMIN", "CAP_NET_RAW",
	"CAP_IPC_LOCK", "CAP_IPC_OWNER", "CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT",
	"CAP_SYS_PTRACE", "CAP_SYS_PACCT", "CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE",
	"CAP_SYS_RESOURCE", "CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG", "CAP_MKNOD", "CAP_LEASE",
	"CAP_AUDIT_WRITE", "CAP_AUDIT_CONTROL", "CAP_SETFCAP", "CAP_MAC_OVERRIDE",
	"CAP_MAC_ADMIN", "CAP_SYSLOG", "CAP_WAKE_ALARM", "CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ",
	"CAP_PERFMON", "CAP_BPF", "CAP_CHECKPOINT_RESTORE",
}

// globalFlagsWithValue are runc's global flags that take a separate value.
var globalFlagsWithValue = map[string]bool{
	"--root": true, "--log": true, "--log-format": true, "--criu": true, "--rootless": true,
}

func main() {
	real, err := realRunc()
	if err != nil {
		fail(err)
	}
	if err := adjust(os.Args[1:]); err != nil {
		fail(err)
	}
	argv := append([]string{real}, os.Args[1:]...)
	if err := syscall.Exec(real, argv, os.Environ()); err != nil {
		fail(fmt.Errorf("exec %s: %w", real, err))
	}
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "numa-testkit-runc: %v\n", err)
	os.Exit(1)
}

func logf(format string, args ...any) {
	path := os.Getenv("NUMA_TESTKIT_RUNC_LOG")
	if path == "" {
		path = "/var/log/numa-testkit-runc.log"
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, format, args...)
}

func realRunc() (string, error) {
	self, _ := os.Executable()
	self, _ = filepath.EvalSymlinks(self)
	candidates := []string{"/usr/sbin/runc", "/usr/bin/runc", "/usr/local/sbin/runc"}
	if env := os.Getenv("NUMA_TESTKIT_REAL_RUNC"); env != "" {
		candidates = []string{env}
	}
	for _, c := range candidates {
		resolved, err := filepath.EvalSymlinks(c)
		if err != nil || resolved == self {
			continue
		}
		return c, nil
	}
	return "", fmt.Errorf("no real runc found among %v", candidates)
}

// adjust finds the command and the spec file it reads, and fits that spec.
func adjust(args []string) error {
	command, rest := splitCommand(args)
	switch command {
	case "create", "run":
		bundle := flagValue(rest, "--bundle", "-b")
		if bundle == "" {
			bundle = "."
		}
		return fitFile(filepath.Join(bundle, "config.json"), true)
	case "exec":
		if process := flagValue(rest, "--process", "-p"); process != "" {
			return fitFile(process, false)
		}
	case "update":
		// Real-kubelet nodes: the CPU / Memory Manager's cpuset updates.
		if resources := flagValue(rest, "--resources", "-r"); resources != "" {
			return fitResources(resources)
		}
	}
	return nil
}

func splitCommand(args []string) (string, []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			return a, args[i+1:]
		}
		if globalFlagsWithValue[a] {
			i++
		}
	}
	return "", nil
}

func flagValue(args []string, long, short string) string {
	for i, a := range args {
		if a == "--" {
			break
		}
		if (a == long || a == short) && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, long+"="); ok {
			return v
		}
		if v, ok := strings.CutPrefix(a, short+"="); ok {
			return v
		}
	}
	return ""
}

// fitFile rewrites a bundle config (wholeSpec) or a bare process spec in place.
func fitFile(path string, wholeSpec bool) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	process := doc
	if wholeSpec {
		p, ok := doc["process"].(map[string]any)
		if !ok {
			return nil
		}
		process = p
	}
	allowed, err := boundingSet()
	if err != nil {
		return err
	}
	changed := fitCapabilities(process, allowed)
	if fitOOMScoreAdj(process) {
		changed = true
	}
	if wholeSpec {
		if linux, ok := doc["linux"].(map[string]any); ok {
			if res, ok := linux["resources"].(map[string]any); ok && fitCpuset(res) {
				changed = true
			}
		}
	}
	if !changed {
		return nil
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o600)
}

func boundingSet() (map[string]bool, error) {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "CapBnd:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return nil, fmt.Errorf("/proc/self/status CapBnd: %w", err)
			}
			allowed := map[string]bool{}
			for i, name := range capNames {
				if mask&(1<<uint(i)) != 0 {
					allowed[name] = true
				}
			}
			return allowed, nil
		}
	}
	return nil, fmt.Errorf("/proc/self/status has no CapBnd line")
}

func fitCapabilities(process map[string]any, allowed map[string]bool) bool {
	caps, ok := process["capabilities"].(map[string]any)
	if !ok {
		return false
	}
	changed := false
	for set, v := range caps {
		list, ok := v.([]any)
		if !ok {
			continue
		}
		kept := make([]any, 0, len(list))
		for _, c := range list {
			name, _ := c.(string)
			if known(name) && !allowed[name] {
				logf("dropping %s from %s (not in the bounding set)\n", name, set)
				changed = true
				continue
			}
			kept = append(kept, c)
		}
		caps[set] = kept
	}
	return changed
}

func known(name string) bool {
	for _, n := range capNames {
		if n == name {
			return true
		}
	}
	return false
}

func fitOOMScoreAdj(process map[string]any) bool {
	v, ok := process["oomScoreAdj"].(float64)
	if !ok {
		return false
	}
	raw, err := os.ReadFile("/proc/self/oom_score_adj")
	if err != nil {
		return false
	}
	own, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil || int(v) >= own {
		return false
	}
	logf("raising oomScoreAdj %d to %d\n", int(v), own)
	process["oomScoreAdj"] = own
	return true
}

// --- cpusets of real-kubelet nodes (docs/real-kubelet.md) ---------------------------

// fitResources fits the LinuxResources JSON of `runc update --resources` (a file, or "-":
// stdin, as containerd passes it; the fitted JSON then becomes the real runc's stdin).
func fitResources(path string) error {
	var raw []byte
	var err error
	if path == "-" {
		raw, err = io.ReadAll(os.Stdin)
	} else {
		raw, err = os.ReadFile(path)
	}
	if err != nil {
		return err
	}
	out := raw
	var res map[string]any
	if json.Unmarshal(raw, &res) == nil && fitCpuset(res) {
		if out, err = json.Marshal(res); err != nil {
			return err
		}
	}
	if path != "-" {
		if len(out) == len(raw) && string(out) == string(raw) {
			return nil
		}
		return os.WriteFile(path, out, 0o600)
	}
	// Hand the (possibly fitted) bytes to the real runc on a fresh stdin: written
	// before the exec (a LinuxResources document is far smaller than a pipe's buffer).
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	if _, err := w.Write(out); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return syscall.Dup3(int(r.Fd()), 0, 0)
}

// fitCpuset cuts resources.cpu.cpus / .mems to the CPUs / memory nodes this process may
// use (Cpus_allowed_list / Mems_allowed_list of /proc/self/status: the node container's
// /sys topology files may be a profile's, not the machine's).
func fitCpuset(res map[string]any) bool {
	cpu, ok := res["cpu"].(map[string]any)
	if !ok {
		return false
	}
	changed := false
	for _, field := range []struct{ key, status string }{
		{"cpus", "Cpus_allowed_list"}, {"mems", "Mems_allowed_list"},
	} {
		asked, _ := cpu[field.key].(string)
		if asked == "" {
			continue
		}
		have, err := allowedList(field.status)
		if err != nil {
			continue
		}
		fitted := fitList(asked, have)
		if fitted != asked {
			logf("cpuset %s: the kubelet asked for %q, this machine has %q: using %q\n",
				field.key, asked, formatList(have), fitted)
			cpu[field.key] = fitted
			changed = true
		}
	}
	return changed
}

func allowedList(key string) ([]int, error) {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			return parseList(strings.TrimSpace(v))
		}
	}
	return nil, fmt.Errorf("/proc/self/status has no %s line", key)
}

// fitList keeps the asked ids the machine has, or all it has when none is left.
func fitList(asked string, have []int) string {
	ids, err := parseList(asked)
	if err != nil || len(have) == 0 {
		return asked
	}
	present := map[int]bool{}
	for _, id := range have {
		present[id] = true
	}
	var kept []int
	for _, id := range ids {
		if present[id] {
			kept = append(kept, id)
		}
	}
	if len(kept) == len(ids) {
		return asked
	}
	if len(kept) == 0 {
		kept = have
	}
	return formatList(kept)
}

func parseList(text string) ([]int, error) {
	var ids []int
	for _, part := range strings.Split(text, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, err
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				return nil, err
			}
		}
		for i := a; i <= b && i-a < 1<<16; i++ {
			ids = append(ids, i)
		}
	}
	return ids, nil
}

func formatList(ids []int) string {
	parts := []string{}
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(ids[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", ids[i], ids[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}
