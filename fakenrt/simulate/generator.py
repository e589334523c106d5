"""A seeded workload generator with named mixes. Pure: the random source is seeded from
the scenario's seed, so the same settings give the same pods.

Arrivals are a Poisson process (``arrivalsPerHour``) over ``duration``; each arrival picks
a pod class of the mix by weight; its run time is log-uniform between the class's bounds.
Every pod is Guaranteed (limits only, one container), so the kubelet aligns its CPUs,
memory and GPUs.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from fakenrt.podspec import PodSpec, pod_from_manifest
from fakenrt.podvalidation import PodInvalid, validated_pod
from fakenrt.simulate.limits import MAX_ARRIVALS_PER_HOUR, MAX_PODS, LimitError, shown
from fakenrt.simulate.workload import GPU, WorkItem, WorkloadError, seconds

GENERATOR_KEYS = ("mix", "duration", "arrivalsPerHour", "namespace")


@dataclass(frozen=True, kw_only=True)
class PodClass:
    name: str
    weight: int
    gpus: int
    cpus: int
    memory_gi: int
    min_minutes: float
    max_minutes: float
    priority: int = 0
    #: Pods submitted together per arrival (a sweep, replicas): same class, same time.
    batch: int = 1


#: Named mixes. Sizes are chosen against the bundled node shapes: an 8-GPU training pod
#: spans two NUMA zones of a 2-zone node in every resource (so ``restricted`` admits it and
#: ``single-numa-node`` cannot), a 4-GPU pod needs one whole 4-GPU zone.
MIXES: Mapping[str, tuple[PodClass, ...]] = {
    "training-inference": (
        PodClass(
            name="train-8gpu",
            weight=1,
            gpus=8,
            cpus=96,
            memory_gi=768,
            min_minutes=120,
            max_minutes=480,
            priority=10,
        ),
        PodClass(
            name="train-4gpu",
            weight=3,
            gpus=4,
            cpus=32,
            memory_gi=256,
            min_minutes=60,
            max_minutes=360,
            priority=10,
        ),
        PodClass(
            name="finetune-2gpu",
            weight=4,
            gpus=2,
            cpus=16,
            memory_gi=96,
            min_minutes=30,
            max_minutes=180,
            priority=5,
            batch=4,
        ),
        PodClass(
            name="infer-1gpu",
            weight=10,
            gpus=1,
            cpus=8,
            memory_gi=32,
            min_minutes=10,
            max_minutes=120,
            batch=3,
        ),
    ),
    "training": (
        PodClass(
            name="train-8gpu",
            weight=1,
            gpus=8,
            cpus=96,
            memory_gi=768,
            min_minutes=120,
            max_minutes=720,
            priority=10,
        ),
        PodClass(
            name="train-4gpu",
            weight=2,
            gpus=4,
            cpus=32,
            memory_gi=256,
            min_minutes=60,
            max_minutes=480,
            priority=10,
        ),
        PodClass(
            name="train-2gpu",
            weight=2,
            gpus=2,
            cpus=16,
            memory_gi=96,
            min_minutes=60,
            max_minutes=240,
            priority=5,
        ),
    ),
    "inference": (
        PodClass(
            name="infer-2gpu",
            weight=1,
            gpus=2,
            cpus=16,
            memory_gi=64,
            min_minutes=10,
            max_minutes=90,
        ),
        PodClass(
            name="infer-1gpu", weight=4, gpus=1, cpus=8, memory_gi=32, min_minutes=5, max_minutes=60
        ),
        PodClass(
            name="embed-cpu", weight=1, gpus=0, cpus=4, memory_gi=16, min_minutes=5, max_minutes=30
        ),
    ),
}


@dataclass(frozen=True, kw_only=True)
class GeneratorSettings:
    mix: str
    duration: float
    arrivals_per_hour: float
    namespace: str = "sim"


def parse_generator(
    raw: Any, *, source: str, options: Mapping[str, str] | None = None
) -> GeneratorSettings:
    """The generator settings of a scenario's ``workload.generate``. ``options`` names the
    command-line option that set a field (``{"mix": "--mix"}``): its errors name the option
    instead of the file."""
    where = f"{source}: workload.generate"
    named = dict(options or {})

    def at(key: str) -> str:
        return named.get(key, f"{where}.{key}")

    if not isinstance(raw, Mapping):
        raise WorkloadError(f"{where}: must be a mapping with {', '.join(GENERATOR_KEYS)}")
    unknown = sorted(set(map(str, raw)) - set(GENERATOR_KEYS))
    if unknown:
        raise WorkloadError(
            f"{where}: unknown field(s) {', '.join(unknown)}; known: {', '.join(GENERATOR_KEYS)}"
        )
    mix = raw.get("mix", "training-inference")
    if not isinstance(mix, str) or mix not in MIXES:
        raise WorkloadError(f"{at('mix')}: {mix!r:.60} is not one of {', '.join(MIXES)}")
    rate = raw.get("arrivalsPerHour", 60)
    if isinstance(rate, bool) or not isinstance(rate, int | float) or not rate > 0:
        raise WorkloadError(f"{at('arrivalsPerHour')}: must be a positive number")
    if rate > MAX_ARRIVALS_PER_HOUR:
        raise LimitError(
            f"{at('arrivalsPerHour')}: {shown(rate)} is beyond the limit of "
            f"{MAX_ARRIVALS_PER_HOUR:g}"
        )
    duration = seconds(raw.get("duration", "24h"), at("duration"), allow_zero=False)
    namespace = raw.get("namespace", "sim")
    if not isinstance(namespace, str) or not namespace:
        raise WorkloadError(f"{at('namespace')}: must be a non-empty string")
    if duration / 3600 * rate > MAX_PODS * 0.9:
        origin = (
            " and ".join(named[k] for k in ("arrivalsPerHour", "duration") if k in named) or where
        )
        raise LimitError(
            f"{origin}: about {duration / 3600 * rate:.0f} pods expected; the limit is {MAX_PODS}"
        )
    return GeneratorSettings(
        mix=str(mix), duration=duration, arrivals_per_hour=float(rate), namespace=namespace
    )


def pod_manifest(*, name: str, namespace: str, cls: PodClass) -> dict[str, Any]:
    limits: dict[str, str] = {"cpu": str(cls.cpus), "memory": f"{cls.memory_gi}Gi"}
    if cls.gpus:
        limits[GPU] = str(cls.gpus)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": cls.name}},
        "spec": {
            "containers": [{"name": "main", "image": cls.name, "resources": {"limits": limits}}]
        },
    }


def generate(settings: GeneratorSettings, *, seed: int) -> tuple[WorkItem, ...]:
    """The workload of ``settings``; the same seed gives the same pods."""
    rng = random.Random(f"{seed}/workload/{settings.mix}")
    classes = MIXES[settings.mix]
    weights = [c.weight for c in classes]
    rate = settings.arrivals_per_hour / 3600.0
    for cls in classes:  # the one validation every pod passes; copies differ in names only
        try:
            validated_pod(
                pod_manifest(name=cls.name, namespace=settings.namespace, cls=cls),
                source=f"generator mix {settings.mix}",
            )
        except PodInvalid as exc:
            raise WorkloadError(str(exc)) from None
    items: list[WorkItem] = []
    # The pods of a class differ only in name: they share the class's spec (the manifest's
    # and the parsed one), which nothing modifies.
    templates: dict[str, tuple[dict[str, Any], PodSpec]] = {}
    t = 0.0
    while True:
        t += rng.expovariate(rate)
        if t >= settings.duration:
            break
        if len(items) >= MAX_PODS:
            raise LimitError(f"the generator made more than {MAX_PODS} pods")
        cls = rng.choices(classes, weights)[0]
        low, high = math.log(cls.min_minutes * 60), math.log(cls.max_minutes * 60)
        arrival = len(items)
        template = templates.get(cls.name)
        if template is None:
            manifest = pod_manifest(name=cls.name, namespace=settings.namespace, cls=cls)
            template = templates[cls.name] = (
                manifest,
                pod_from_manifest(manifest, source="generator"),
            )
        base, spec = template
        for member in range(cls.batch):
            duration = float(round(math.exp(rng.uniform(low, high))))
            name = f"{cls.name}-{arrival:06d}" + (f"-{member}" if cls.batch > 1 else "")
            metadata = {**base["metadata"], "name": name}
            items.append(
                WorkItem(
                    at=round(t, 3),
                    duration=duration,
                    priority=cls.priority,
                    manifest={**base, "metadata": metadata},
                    spec=replace(spec, name=name),
                    pod_class=cls.name,
                )
            )
    return tuple(items)
