"""The store-tenancy reference: authentication and authorization of its own in front of a real
Chroma server's tenants and databases (``kbconform_reference.tenancy.adapter:chroma_server``)."""
