"""Fixtures shared by the test modules."""

import os

import pytest

import adz


@pytest.fixture
def s3_bucket():
    """The test bucket on the loopback MinIO that `make python-test` starts. Without one the
    test skips, saying why, unless `ADZ_REQUIRE_S3=1`, which makes that a failure."""
    def skip(why):
        if os.environ.get("ADZ_REQUIRE_S3") == "1":
            pytest.fail(f"ADZ_REQUIRE_S3=1 but {why}")
        pytest.skip(f"{why} (run `make python-test` to start MinIO)")

    if "s3" not in adz.features:
        skip("the module is built without the s3 feature")
    endpoint = os.environ.get("AWS_ENDPOINT_URL")
    if not endpoint:
        skip("AWS_ENDPOINT_URL is not set")
    if not endpoint.startswith(("http://127.0.0.1:", "http://localhost:")):
        skip("AWS_ENDPOINT_URL is not on loopback; these tests only use 127.0.0.1")
    return os.environ.get("ADZ_S3_BUCKET", "adz-test")
