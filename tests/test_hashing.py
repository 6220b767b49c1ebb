import hashlib

import pytest

from orchrm.errors import ChecksumMismatch
from orchrm.hashing import sha256_file, verify_pinned


def test_sha256_file_reads_in_chunks(tmp_path):
    f = tmp_path / "w.bin"
    f.write_bytes(b"x" * 10_001)
    assert sha256_file(f, chunk=4096) == hashlib.sha256(b"x" * 10_001).hexdigest()


def test_verify_pinned_returns_the_digest_or_refuses_naming_both(tmp_path):
    f = tmp_path / "w.bin"
    f.write_bytes(b"weights")
    digest = hashlib.sha256(b"weights").hexdigest()
    assert verify_pinned(f, digest, hint="h") == digest
    with pytest.raises(
        ChecksumMismatch, match=rf"w.bin has sha256 {digest[:16]}…, expected 0{{16}}… for tiny; refusing"
    ) as err:
        verify_pinned(f, "0" * 64, hint="reinstall it", name="tiny")
    assert err.value.hint == "reinstall it"
