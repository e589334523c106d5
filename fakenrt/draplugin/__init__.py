"""A fake DRA kubelet plugin for a real kubelet: the profile node's DRA drivers, prepared
as fakenrt's simulated drivers prepare them (``fakenrt.dra.driver``)."""
