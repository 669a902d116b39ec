"""Optional parts that sit beside the engine and are selected in settings, never imported by it."""
