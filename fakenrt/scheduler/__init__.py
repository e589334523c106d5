"""The reference NUMA scheduler: a pure plugin (filter, reservation, reconstruction,
scores) and a scheduler loop around it. See docs/scheduler.md."""
