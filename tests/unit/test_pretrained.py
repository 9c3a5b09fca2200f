"""The from_pretrained adapters' shared identity: the hub commit a loaded model was resolved to."""

from __future__ import annotations


def test_a_hub_models_identity_records_the_commit_it_resolved():
    """Two snapshots of one hub id are two protocols: the adapters record the commit transformers resolved (its
    config's _commit_hash), None for a local folder (whose files' checksum is recorded instead)."""
    from types import SimpleNamespace

    from t2ibench.models.pretrained import Pretrained

    assert Pretrained.commit(SimpleNamespace(config=SimpleNamespace(_commit_hash="0123abc"))) == "0123abc"
    assert Pretrained.commit(SimpleNamespace(config=SimpleNamespace(_commit_hash=None))) is None
    assert Pretrained.commit(SimpleNamespace()) is None
