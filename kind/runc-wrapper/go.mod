// A runc wrapper for machines whose capability bounding set is smaller than what
// containers ask for (see docs/kind.md). Standard library only.
module numa-testkit/kind/runc-wrapper

go 1.22
