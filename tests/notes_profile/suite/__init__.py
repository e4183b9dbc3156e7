"""The notes profile's own suite tests."""
