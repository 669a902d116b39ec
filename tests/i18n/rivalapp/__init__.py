"""An app whose catalogs translate common words other ways, installed before the app to see that ours still win."""
