"""The bundled scenario of ``fakenrt simulate`` (what ``make demo`` runs)."""
