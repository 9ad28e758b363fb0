"""Shared contract suites: the definition of "an adapter that works".

Each module holds a base class without a ``Test`` prefix; an implementer subclasses it
in their own test module and supplies one factory fixture. Nothing here needs copying:

    # tests/test_my_storage.py of a third-party package
    import pytest
    from contract_tests.storage import StorageContract

    class TestMyStorage(StorageContract):
        @pytest.fixture
        def make_storage(self, tmp_path):
            def make(name="default"):
                return MyStorage(tmp_path / name)
            return make

The ``pytest11`` entry point ``tulving-contract`` (``contract_tests.plugin``) makes pytest
rewrite asserts inside these modules so failures show values.
"""
