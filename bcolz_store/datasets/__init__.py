"""The layout of datasets in a store: which files a carray or ctable has, how
they are read into engines and containers, and how changes are staged for a
commit.  Above :mod:`bcolz_store.chunks` and :mod:`bcolz_store.storage`, below
the public classes."""
