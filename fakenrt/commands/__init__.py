"""Click command families of the fakenrt CLI, one module each (thin: validate, call run)."""
