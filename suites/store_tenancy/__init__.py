"""The store-tenancy profile's own suite."""
