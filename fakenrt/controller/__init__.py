"""``fakenrt controller``: fake NUMA nodes on a real API server.

Pure core (``fleet``, ``node``, ``lag``, ``timers``, ``pods``, ``podstatus``,
``nodeobjects``, ``effects``): pods and time in, effects out, in real or simulated time.
Edges (``kube``, ``watching``, ``writers``, ``executor``, ``registration``, ``endpoints``,
``metrics``) talk to the API server, gRPC and the filesystem; ``runner`` wires them.
See docs/controller.md.
"""
