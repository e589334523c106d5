// Command coredns is CoreDNS with a chosen plugin set, built the way CoreDNS documents for
// a custom build from its packages: the plugins register themselves when imported, and
// CoreDNS's own directive list orders them.
package main

import (
	"github.com/coredns/coredns/coremain"

	// kubeadm's Corefile: errors, health, ready, kubernetes, prometheus (metrics),
	// forward, cache, loop, reload, loadbalance.
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"

	// Common in hand-edited Corefiles (no SDKs behind them).
	_ "github.com/coredns/coredns/plugin/hosts"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/rewrite"
	_ "github.com/coredns/coredns/plugin/template"
	_ "github.com/coredns/coredns/plugin/whoami"
)

func main() { coremain.Run() }
