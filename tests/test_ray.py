"""Ray Data adapter: protected rows built on workers from a config and a key reference.

One small local Ray cluster for the module (4 logical CPUs: 2 actors and the read, shuffle and write tasks); skipped without ``ray``.
"""

from __future__ import annotations

import itertools
import json
import os
import pickle
import random
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from private_vectors.integrations.ray import (
    ChromaDatasink,
    DetectDocuments,
    FaissShardDatasink,
    FaissShards,
    ParquetDatasink,
    ProtectDocuments,
    SecretRef,
    merge_index_changes,
    protect_dataset,
)
from private_vectors.integrations.ray_stages import _blocks_rows

KEY = "ray-test-key-Zq8vN3xW1pLk7Rt2"
KEY_ENV_NAME = "PV_RAY_TEST_KEY"
SPILL_STORE_BYTES = 80 * 2**20  # a small object store (Ray's minimum is 75 MiB): a test can force spilling
FIRST = ["Amelia", "Bruno", "Chiara", "Dmitri", "Esther", "Farid", "Greta", "Hiroshi", "Ingrid", "Jonas",
         "Kalinda", "Lorenzo", "Mireille", "Nikolai", "Oksana", "Pavel", "Quentin", "Rosalind", "Sebastian",
         "Theodora", "Ulrich", "Valentina", "Wilhelmina", "Xavier", "Yolanda", "Zoltan"]
LAST = ["Okafor", "Lindqvist", "Moreau", "Petrov", "Nakamura", "Haddad", "Castellano", "Brennan", "Kowalski",
        "Oyelaran", "Vasquez", "Thornbury", "Achterberg", "Fairweather", "Gruber", "Halvorsen"]
MORE_LAST = ["Abernathy", "Szymanski", "Ekwueme", "Marchetti", "Rasmussen", "Delacroix", "Villanueva", "Kuznetsov",
             "Ballantyne", "Whitcombe"]  # 26 x 26 people: enough for 2,000 documents of three each


def _docs(n: int) -> list[dict[str, str]]:
    """Documents whose names occur once each (no entity for the second pass to carry over)."""
    names = [f"{a} {b}" for a, b in itertools.product(FIRST, LAST)]
    random.Random(0).shuffle(names)
    return [{"id": f"d{i:04d}", "text": f"{names[i]} was admitted on 12 March 2021; call {555_0100 + i} for "
             f"the discharge summary of patient {names[i]}."} for i in range(n)]


def _job_docs(n: int, seed: int = 0) -> list[dict[str, str]]:
    """Documents where a person is named in full once and by surname alone elsewhere (where the
    recognizers miss the surname): only a job-wide index replaces it everywhere."""
    names = [(a, b) for a, b in itertools.product(FIRST, LAST)]
    more = [(a, b) for a, b in itertools.product(FIRST, MORE_LAST)]
    random.Random(seed).shuffle(names)
    random.Random(seed).shuffle(more)
    names += more
    out = []
    for i in range(n):
        first, last = names[i // 3]
        if i % 3 == 0:
            text = f"{first} {last} was admitted on 12 March 2021; call {555_0100 + i} for the discharge summary."
        elif i % 3 == 1:
            text = f"Results went to {last}; the gene panel was negative."
        else:
            text = f"Ask {last} about the gene panel."
        out.append({"id": f"d{i:04d}", "text": text})
    return out


def test_index_merge_does_not_depend_on_order() -> None:
    parts = [{"a": "PERSON", "b": "~PERSON"}, {"a": "LOCATION", "b": "PERSON", "c": "~LOCATION"},
             {"c": None, "d": "~PERSON"}, {"d": "~LOCATION"}]
    merged = [merge_index_changes(p) for p in itertools.permutations(parts)]
    assert all(m == merged[0] for m in merged)
    assert merged[0] == {"a": "LOCATION", "b": "PERSON", "c": None, "d": "~LOCATION"}


def test_protect_args_must_be_a_dict() -> None:
    with pytest.raises(Exception, match=r"protect_args.*a dict of map_batches arguments"):
        protect_dataset(None, {}, protect_args=["num_gpus", 1])


def test_secret_ref_names_a_variable_or_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(Exception, match="exactly one"):
        SecretRef(env="A", file="b")
    monkeypatch.setenv("PV_SOME_KEY", KEY)
    assert SecretRef(env="PV_SOME_KEY").read() is not None
    keyfile = tmp_path / "key"
    keyfile.write_text(KEY + "\n")
    assert SecretRef(file=str(keyfile)).read() == SecretRef(env="PV_SOME_KEY").read()
    ref = pickle.dumps(SecretRef(file=str(keyfile)))
    assert KEY.encode() not in ref and b"PV_SOME_KEY" not in ref


ray = pytest.importorskip("ray")
pa = pytest.importorskip("pyarrow")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    spill = tmp_path_factory.mktemp("spill")
    os.environ[KEY_ENV_NAME] = KEY  # set outside Ray: the workers inherit the driver's environment
    ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False, configure_logging=False,
             object_store_memory=SPILL_STORE_BYTES, _system_config={"object_spilling_config": json.dumps(
                 {"type": "filesystem", "params": {"directory_path": str(spill)}})})
    session = Path(ray._private.worker._global_node.get_session_dir_path())
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the test's classes reach the workers
    yield {"spill": spill, "session": session}
    ray.shutdown()
    os.environ.pop(KEY_ENV_NAME, None)


@pytest.fixture(scope="module")
def embedding(cluster: dict[str, Path]) -> object:
    from private_vectors import PrivateEmbedding

    return PrivateEmbedding(model="fake:32", eps=10, key=KEY, sanitize="redact", seal=False)  # clear rows


@pytest.mark.slow  # two jobs on the cluster (40-130 s); tests/test_sealed_paths.py runs the same worker and sinks directly
def test_sealed_rows_on_ray_open_for_the_key_holder_and_a_rerun_rewrites_the_same_files(
        cluster: dict[str, Path], tmp_path: Path) -> None:
    """A keyed configuration seals (the default): the workers unwrap the recorded data key with
    the key they read, so every row is a marker and a record, the same bytes on a rerun."""
    import pyarrow.parquet as pq

    from private_vectors import PrivateEmbedding
    from private_vectors.integrations.ray_sealed import open_rows

    ef = PrivateEmbedding(model="fake:32", eps=10, key=KEY, sanitize="redact")
    docs = _docs(8)
    sink = ParquetDatasink(tmp_path / "pq")
    _protect(ef, docs, sink)
    first = {p.name: p.read_bytes() for p in Path(sink.path).glob("part-*.parquet")}
    table = pq.read_table(sink.path).to_pydict()
    assert all(d.startswith("pv-sealed:") for d in table["document"])
    assert not any(n in json.dumps(table) for d in docs for n in d["text"].split()[:2])
    opened = {p.doc_id: p.text for p in open_rows(ef, table["id"], table["metadata"])}
    assert [opened[d["id"]] for d in docs] == ef.sanitize_documents([d["text"] for d in docs])
    _protect(ef, docs, sink)  # a rerun (every task retried): the same files, byte for byte
    assert {p.name: p.read_bytes() for p in Path(sink.path).glob("part-*.parquet")} == first


def _protect(embedding: object, docs: list[dict[str, str]], sink: object, **kwargs: object) -> None:
    ds = ray.data.from_items(docs).repartition(4).random_shuffle(seed=1)
    out = ds.map_batches(ProtectDocuments, fn_constructor_kwargs={
        "config": embedding.get_config(), "secret": SecretRef(env=KEY_ENV_NAME), **kwargs},
        batch_size=8, concurrency=2, num_cpus=1)
    out.write_datasink(sink)


@pytest.mark.slow  # 30-40 s on 2 cores; test_a_job_on_ray_stores_what_one_process_stores runs by default
def test_workers_protect_like_the_single_process_path(cluster: dict[str, Path], embedding: object,
                                                      tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    docs = _docs(40)
    sink = ParquetDatasink(tmp_path / "pq")
    _protect(embedding, docs, sink)
    table = pq.read_table(sink.path).to_pydict()
    got = dict(zip(table["id"], table["document"], strict=True))
    vectors = dict(zip(table["id"], np.asarray(table["embedding"], dtype=np.float32), strict=True))
    assert sorted(got) == [d["id"] for d in docs]
    single = embedding.sanitize_documents([d["text"] for d in docs])
    assert [got[d["id"]] for d in docs] == single
    assert all("<PERSON>" in t and "Okafor" not in t for t in single)
    expected = embedding.pipeline.embed_sanitized(single)
    np.testing.assert_allclose(np.vstack([vectors[d["id"]] for d in docs]), expected, atol=1e-5)
    assert sink.index_changes()  # the keyed entities, as HMACs
    assert not any(w in json.dumps(sink.index_changes()) for w in ("Okafor", "okafor", "Amelia"))
    files = sorted(p.name for p in Path(sink.path).iterdir())
    _protect(embedding, docs, sink)  # the same job again (a retry): the same files, no duplicate row
    assert sorted(p.name for p in Path(sink.path).iterdir()) == files
    assert len(pq.read_table(sink.path)) == len(docs)


@pytest.mark.slow  # 30-40 s on 2 cores; test_a_job_on_ray_stores_what_one_process_stores runs by default
def test_the_key_is_in_no_task_argument_runtime_env_log_or_spilled_object(cluster: dict[str, Path],
                                                                          embedding: object, tmp_path: Path) -> None:
    kwargs = {"config": embedding.get_config(), "secret": SecretRef(env=KEY_ENV_NAME)}
    assert KEY.encode() not in pickle.dumps(kwargs)  # what Ray ships to the actors
    assert KEY not in json.dumps(ray.get_runtime_context().runtime_env)

    @ray.remote
    def canary() -> str:
        print("ray-canary-3b9f")  # a worker's stdout lands in the session's logs
        return os.environ.get(KEY_ENV_NAME, "")[:3]

    assert ray.get(canary.remote()) == KEY[:3]  # the variable reached the workers outside Ray
    _protect(embedding, _docs(16), FaissShardDatasink(tmp_path / "f"))
    job = _job(embedding, _job_docs(12), FaissShardDatasink(tmp_path / "g"))  # both steps: spans, facts in the store
    assert job.to_json() and KEY.encode() not in pickle.dumps({**kwargs, "job": job.to_json()})  # the second step's
    # hold both steps' rows in the object store, then fill it past its size: they are spilled to disk
    ds = ray.data.from_items(_job_docs(12))
    detected = ds.map_batches(DetectDocuments, fn_constructor_kwargs=kwargs, batch_size=8, concurrency=1,
                              num_cpus=1).materialize()
    protected = detected.map_batches(ProtectDocuments, fn_constructor_kwargs=kwargs, batch_size=8, concurrency=1,
                                     num_cpus=1).materialize()
    filler = [ray.put(np.ones(SPILL_STORE_BYTES // 4, dtype=np.uint8)) for _ in range(6)]
    assert protected.count() == detected.count() == 12
    spilled = b"".join(p.read_bytes() for p in cluster["spill"].rglob("*") if p.is_file())
    assert b"gene panel" in spilled  # the spill folder holds the jobs' rows (raw text: see the module's docs)
    del filler
    time.sleep(1.0)  # log flush
    texts = b""
    for root in (cluster["session"], cluster["spill"]):
        for p in root.rglob("*"):
            if p.is_file() and p.stat().st_size < 50_000_000:
                try:
                    texts += p.read_bytes()
                except OSError:
                    continue
    assert b"ray-canary-3b9f" in texts  # the scan reads the logs
    assert KEY.encode() not in texts


@pytest.mark.slow  # 30-40 s on 2 cores; test_a_job_on_ray_stores_what_one_process_stores runs by default
def test_faiss_shards_fan_out_equals_the_merged_index(cluster: dict[str, Path], embedding: object,
                                                      tmp_path: Path) -> None:
    docs = _docs(24)
    _protect(embedding, docs, FaissShardDatasink(tmp_path / "f"))
    shards = FaissShards(tmp_path / "f")
    assert len(shards) == 24 and len(shards.shards) > 1
    Q = embedding.embed_query_array(["discharge summary of patient", "admitted in March"])
    scores, ids = shards.search(Q, k=5)
    merged, order = shards.merged()
    ms, mi = merged.search(np.ascontiguousarray(Q, dtype=np.float32), 5)
    np.testing.assert_allclose(scores, ms, rtol=1e-5)
    assert [set(r) for r in ids] == [{order[i] for i in row} for row in mi]
    _protect(embedding, docs, FaissShardDatasink(tmp_path / "f"))  # retried: same shards
    assert len(FaissShards(tmp_path / "f")) == 24


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> int:
    exe = shutil.which("chroma", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("the chroma CLI (chromadb) is not installed")
    port = _free_port()
    proc = subprocess.Popen([exe, "run", "--path", str(tmp_path_factory.mktemp("chroma")), "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(120):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.25)
        else:
            pytest.skip("chroma run did not start")
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.mark.slow  # 30-40 s on 2 cores; test_a_job_on_ray_stores_what_one_process_stores runs by default
def test_chroma_server_sink_upserts_and_reopens_with_the_key(cluster: dict[str, Path], embedding: object,
                                                             chroma_server: int,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    import chromadb

    from private_vectors.integrations.chroma import create_collection, open_collection

    client = chromadb.HttpClient(host="localhost", port=chroma_server)
    create_collection(client, "notes", embedding)
    docs = _docs(30)
    sink = ChromaDatasink("notes", port=chroma_server, secret=SecretRef(env=KEY_ENV_NAME))
    _protect(embedding, docs, sink)
    _protect(embedding, docs, sink)  # a retried job: upsert by id, nothing twice
    col = open_collection(client, "notes", key=KEY)
    assert col.count() == 30
    got = col.get(ids=[d["id"] for d in docs], include=["documents", "metadatas"])  # (in the server's order)
    stored = dict(zip(got["ids"], got["documents"], strict=True))
    assert [stored[d["id"]] for d in docs] == embedding.sanitize_documents([d["text"] for d in docs])
    assert all(m and m.get("pv_restore") for m in got["metadatas"])
    state = sink.index_state()
    assert state and state["entries"]
    # reopened with the key, a query naming an ingested person is sanitized by the stored index
    name = docs[3]["text"].split(" was ")[0]
    assert name.lower() not in col._embedding_function.pipeline.sanitize_queries([f"what about {name.lower()}?"])[0]
    hits = col.query(query_texts=["discharge summary"], n_results=3)
    assert len(hits["ids"][0]) == 3


def _job(embedding: object, docs: list[dict[str, str]], sink: object, partitions: int = 2, seed: int = 1,
         **kwargs: object) -> object:
    """One job over ``docs`` in a shuffled order (shuffled on the driver: Ray's all-to-all
    ``random_shuffle`` would start a task per block for a few dozen rows) and ``partitions`` blocks."""
    ds = ray.data.from_items(random.Random(seed).sample(docs, len(docs)), override_num_blocks=partitions)
    _, job = protect_dataset(ds, embedding.get_config(), sink, secret=SecretRef(env=KEY_ENV_NAME),
                             batch_size=8, concurrency=2, num_cpus=1, **kwargs)
    return job


def _single_process(docs: list[dict[str, str]]) -> tuple[list[str], dict[str, str]]:
    """One process, one job: the stored texts and the entity index it leaves."""
    from private_vectors import PrivateEmbedding

    embedding = PrivateEmbedding(model="fake:32", eps=10, key=KEY, sanitize="redact")
    texts = embedding.sanitize_documents([d["text"] for d in docs])
    return texts, embedding.sanitizer.get_state()["entries"]


def _stored(path: Path) -> tuple[dict[str, str], dict[str, np.ndarray]]:
    import pyarrow.parquet as pq

    table = pq.read_table(path).to_pydict()
    return (dict(zip(table["id"], table["document"], strict=True)),
            dict(zip(table["id"], np.asarray(table["embedding"], dtype=np.float32), strict=True)))


def _dies_once(base: type, marks: Path, method: str) -> type:
    """``base`` whose ``method`` (``__call__`` of a map, or a sink's ``write``) kills its worker process on
    its first attempt at the rows holding document d0001, a marker file remembering the attempt (a write
    dies after writing them): Ray starts another worker and retries the task."""

    def run(self: object, data: object, *rest: object) -> object:
        rows = [dict(data)] if method == "__call__" else list(_blocks_rows(list(data)))  # type: ignore[call-overload]
        data = data if method == "__call__" else [pa.Table.from_pydict(r) for r in rows]
        mark = marks / f"{method}-attempted"
        if any("d0001" in map(str, r["id"]) for r in rows) and not mark.exists():
            if method == "write":
                getattr(base, method)(self, data, *rest)
            marks.mkdir(parents=True, exist_ok=True)
            mark.write_text("died once")
            os._exit(1)
        return getattr(base, method)(self, data, *rest)

    return type(f"DiesOnce{base.__name__}", (base,), {method: run})


def test_a_job_on_ray_stores_what_one_process_stores(cluster: dict[str, Path], embedding: object,
                                                     tmp_path: Path) -> None:
    docs = _job_docs(36)
    texts, entries = _single_process(docs)
    assert sum("gene panel" in t for t in texts) == 24  # an ordinary word stays
    alone = [t for i, t in enumerate(texts) if i % 3]
    assert sum(any(last in t for last in LAST) for t in alone) <= len(alone) // 4  # found again, job-wide
    sink = ParquetDatasink(tmp_path / "pq")
    # two workers detect and emit facts (the merge across workers is what makes the job order-free);
    # the second step, a map of each row against the frozen index, runs on one (an actor fewer to start)
    _job(embedding, docs, sink, protect_args={"num_cpus": 1, "memory": 2**20, "concurrency": 1})
    got, vectors = _stored(sink.path)
    assert [got[d["id"]] for d in docs] == texts
    assert sink.index_changes() == entries
    np.testing.assert_allclose(np.vstack([vectors[d["id"]] for d in docs]),
                               embedding.pipeline.embed_sanitized(texts), atol=1e-5)
    # the data has teeth: the same documents protected as batches of their own store otherwise
    from private_vectors import PrivateEmbedding

    one = PrivateEmbedding(model="fake:32", eps=10, key=KEY, sanitize="redact")
    shuffled = random.Random(2).sample(range(len(docs)), len(docs))
    per_batch = {i: out for part in (shuffled[:12], shuffled[12:24], shuffled[24:])
                 for i, out in zip(part, one.sanitize_documents([docs[i]["text"] for i in part]), strict=True)}
    assert [per_batch[i] for i in range(len(docs))] != texts


@pytest.mark.slow  # ~40-80 s on 2 cores (two workers restart); test_a_rewritten_block_leaves_no_duplicate runs by default
def test_a_retried_task_leaves_no_duplicate(cluster: dict[str, Path], embedding: object, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    import pyarrow.parquet as pq

    import private_vectors.integrations.ray_stages as ray_stages

    docs = _job_docs(36)
    texts, entries = _single_process(docs)
    # one detection task and one write task die on their first attempt (the write after writing its rows)
    marks = tmp_path / "marks"
    monkeypatch.setattr(ray_stages, "DetectDocuments", _dies_once(DetectDocuments, marks, "__call__"))
    sink = _dies_once(ParquetDatasink, marks, "write")(tmp_path / "pq")
    _job(embedding, docs, sink)
    assert sorted(p.name for p in marks.iterdir()) == ["__call__-attempted", "write-attempted"]
    got, _ = _stored(sink.path)
    assert pq.read_table(sink.path).num_rows == len(docs) == len(sink.stored_ids())  # no duplicate row
    assert len(list(Path(sink.path).glob("part-*"))) == len(list(Path(sink.path).glob("_index-*")))
    assert [got[d["id"]] for d in docs] == texts
    assert sink.index_changes() == entries


def test_a_rewritten_block_leaves_no_duplicate(tmp_path: Path) -> None:
    """What a retried write task does: the same block written again rewrites the same files."""
    import pyarrow.parquet as pq

    block = pa.table({"id": ["a", "b"], "document": ["<PERSON> came", "x"], "metadata": ["", ""],
                      "embedding": [[0.6, 0.8], [1.0, 0.0]], "pv_index": ['{"k1": "PERSON"}', ""]})
    other = pa.table({"id": ["c"], "document": ["y"], "metadata": [""], "embedding": [[0.0, 1.0]],
                      "pv_index": ['{"k2": "~PERSON"}']})
    parquet, shards = ParquetDatasink(tmp_path / "pq"), FaissShardDatasink(tmp_path / "f")
    for sink in (parquet, shards):
        sink.on_write_start()
        for blocks in ([block], [block, other], [other]):  # a task, then its retry, then a retry of part of it
            sink.write(blocks, None)
    assert pq.read_table(parquet.path).num_rows == 3 and len(list(Path(parquet.path).iterdir())) == 4
    assert parquet.index_changes() == {"k1": "PERSON", "k2": "~PERSON"}
    assert len(FaissShards(shards.path)) == 3 and sorted(FaissShards(shards.path).stored_ids()) == ["a", "b", "c"]


@pytest.mark.slow
def test_two_thousand_documents_on_two_workers_and_four_partitions(
        cluster: dict[str, Path], embedding: object, chroma_server: int, tmp_path: Path) -> None:
    import chromadb

    from private_vectors.integrations.chroma import create_collection, open_collection

    docs = _job_docs(2000, seed=3)
    texts, entries = _single_process(docs)
    client = chromadb.HttpClient(host="localhost", port=chroma_server)
    create_collection(client, "job2000", embedding)
    marks = tmp_path / "marks"  # one write task dies after its upsert, and is retried
    sink = _dies_once(ChromaDatasink, marks, "write")("job2000", port=chroma_server,
                                                      secret=SecretRef(env=KEY_ENV_NAME))
    ds = ray.data.from_items(docs).repartition(4).random_shuffle(seed=7)
    protect_dataset(ds, embedding.get_config(), sink, secret=SecretRef(env=KEY_ENV_NAME),
                    batch_size=64, concurrency=2, num_cpus=1)
    assert [p.name for p in marks.iterdir()] == ["write-attempted"]
    col = open_collection(client, "job2000", key=KEY)
    assert col.count() == len(docs)  # no duplicate
    got = col.get(ids=[d["id"] for d in docs], include=["documents", "embeddings"])
    stored = dict(zip(got["ids"], got["documents"], strict=True))
    assert [stored[d["id"]] for d in docs] == texts
    vectors = dict(zip(got["ids"], np.asarray(got["embeddings"], dtype=np.float32), strict=True))
    np.testing.assert_allclose(np.vstack([vectors[d["id"]] for d in docs]),
                               embedding.pipeline.embed_sanitized(texts), atol=1e-5)
    assert sink.index_state()["entries"] == entries
    # reopened with the key, entity queries are answered as one process that ingested the documents
    from private_vectors import PrivateEmbedding

    single = PrivateEmbedding(model="fake:32", eps=10, key=KEY, sanitize="redact")
    single.sanitize_documents([d["text"] for d in docs])
    queries = [f"what did {d['text'].split()[0].lower()} {d['text'].split()[1].lower()} say?" for d in docs[:300:3]]
    reopened = col._embedding_function.pipeline.sanitize_queries(queries)
    assert reopened == single.pipeline.sanitize_queries(queries)
    assert sum(q != r for q, r in zip(queries, reopened, strict=True)) == len(queries)
