"""Data in through the browser (console/upload_views.py, annotation/services/uploads.py): real SciQ, ARC,
SyllabusQA and PDF files uploaded as a researcher would, imported by the importers' own code as a job,
refusals that keep the choices, limits, and every other role refused."""

from __future__ import annotations

import csv
import io
import json
import re
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import Client

from annotation.models import Corpus, Distractor, Document, Job, Passage, QAPair
from annotation.services import uploads
from tests.factories import make_corpus, make_researcher, make_worker

pytestmark = pytest.mark.django_db
URL = "/corpora/upload/"


@pytest.fixture(autouse=True)
def memory_storage(settings: Any, eager_celery: None) -> None:
    """Uploads go through Django's storage: an in-memory one here, so nothing may read them from a path."""
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {"BACKEND": "django.core.files.storage.InMemoryStorage"},
    }


@pytest.fixture
def researcher(client: Client) -> Client:
    client.force_login(make_researcher("uploader"))
    return client


def _file(name: str, data: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data, content_type="application/octet-stream")


def _zip(entries: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def _post(client: Client, files: list[SimpleUploadedFile], **fields: Any) -> Any:
    data = {"layout": "documents", "target": "new", "new_name": "", "min_paragraph_chars": "40", **fields}
    return client.post(URL, {**data, "files": files})


def _job(response: Any) -> Job:
    assert response.status_code == 302, response.content.decode()[:2000]
    match = re.search(r"/corpora/upload/jobs/(\d+)/$", response["Location"])
    assert match, response["Location"]
    return Job.objects.get(pk=int(match.group(1)))


def _sciq_files(root: Path, n: int, drop: str = "") -> list[SimpleUploadedFile]:
    files = []
    for name in ("train.json", "valid.json", "test.json"):
        if name != drop:
            items = json.loads((root / name).read_text(encoding="utf-8"))[:n]
            files.append(_file(name, json.dumps(items).encode()))
    return files


def _uploads_left() -> list[str]:
    try:
        folders, _ = default_storage.listdir("uploads")
    except FileNotFoundError:
        return []
    return [f for folder in folders for f in default_storage.listdir(f"uploads/{folder}")[1]]


def test_sciq_files__imported_by_a_job_with_the_summary_and_a_link(
    researcher: Client, shared_data: Callable[[str], Path]
) -> None:
    response = _post(researcher, _sciq_files(shared_data("sciq"), 20), layout="sciq", new_name="sciq-pilot")
    job = _job(response)
    assert job.status == Job.Status.DONE, job.error
    corpus = Corpus.objects.get(name="sciq-pilot")
    assert corpus.kind == Corpus.Kind.TEXTBOOK
    assert QAPair.objects.filter(corpus=corpus).count() == 60
    assert Distractor.objects.filter(qa_pair__corpus=corpus).count() == 180
    page = researcher.get(response["Location"]).content.decode()
    assert "Corpus &#x27;sciq-pilot&#x27;: 60 questions (60 new, 0 unchanged)" in page
    assert 'href="/corpora/sciq-pilot/"' in page
    assert _uploads_left() == []  # the stored copies are removed once imported


def _arc_zip(root: Path, n: int, broken_line: int = 0) -> tuple[bytes, Path]:
    entries = {}
    for subset in ("ARC-Easy", "ARC-Challenge"):
        for split in ("Train", "Dev", "Test"):
            name = f"{subset}/{subset}-{split}.jsonl"
            lines = (root / name).read_text(encoding="utf-8").splitlines()[:n]
            if broken_line and subset == "ARC-Easy" and split == "Train":
                lines[broken_line - 1] = lines[broken_line - 1][:-20]
            entries[f"ARC-V1-Feb2018-2/{name}"] = ("\n".join(lines) + "\n").encode()
    return _zip(entries), root


def test_arc_zip__same_rows_as_the_command(
    researcher: Client, shared_data: Callable[[str], Path], tmp_path: Path
) -> None:
    data, root = _arc_zip(shared_data("arc"), 10)
    job = _job(_post(researcher, [_file("ARC-V1-Feb2018.zip", data)], layout="arc", new_name="arc-pilot"))
    assert job.status == Job.Status.DONE, job.error
    assert job.result["summary"]["qa_pairs"]["created"] == 60
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        archive.extractall(tmp_path)
    out = io.StringIO()
    call_command("import_arc", str(tmp_path / "ARC-V1-Feb2018-2"), "--corpus", "arc-pilot", stdout=out)
    assert "60 questions (0 new, 60 unchanged)" in out.getvalue()  # the command reads the same rows


def _syllabus_zip(root: Path) -> tuple[bytes, dict[str, int]]:
    """A SyllabusQA release zip of the real files of one syllabus per split (the smallest PDFs)."""
    folder = root / "data" / "dataset_split"
    pdfs = root / "syllabi" / "syllabi_redacted" / "pdf"
    entries: dict[str, bytes] = {}
    counts: dict[str, int] = {}
    for split in ("train", "val", "test"):
        with (folder / f"{split}.csv").open(encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle)
            rows = list(reader)
            columns = reader.fieldnames or []
        names = sorted({r["syllabus_name"] for r in rows}, key=lambda n: (pdfs / f"{n}.pdf").stat().st_size)
        chosen = [r for r in rows if r["syllabus_name"] == names[0]]
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=columns)
        writer.writeheader()
        writer.writerows(chosen)
        entries[f"SyllabusQA-main/data/dataset_split/{split}.csv"] = out.getvalue().encode()
        for kind, suffix in (("text", ".txt"), ("pdf", ".pdf")):
            path = root / "syllabi" / "syllabi_redacted" / kind / f"{names[0]}{suffix}"
            entries[f"SyllabusQA-main/syllabi/syllabi_redacted/{kind}/{path.name}"] = path.read_bytes()
        counts[names[0]] = len(chosen)
    return _zip(entries), counts


def test_syllabusqa_zip__real_syllabi_with_pdfs_and_spans(
    researcher: Client, shared_data: Callable[[str], Path]
) -> None:
    data, counts = _syllabus_zip(shared_data("syllabusqa"))
    job = _job(_post(researcher, [_file("SyllabusQA-main.zip", data)], layout="syllabusqa", new_name="syl"))
    assert job.status == Job.Status.DONE, job.error
    corpus = Corpus.objects.get(name="syl")
    assert corpus.kind == Corpus.Kind.SYLLABUS
    assert QAPair.objects.filter(corpus=corpus).count() == sum(counts.values())
    documents = Document.objects.filter(corpus=corpus)
    assert set(documents.values_list("name", flat=True)) == set(counts)
    assert all(d.pdf and default_storage.exists(d.pdf.name) and len(d.page_starts) > 1 for d in documents)
    assert job.result["summary"]["spans_located"] > 0


def test_documents__pdf_and_markdown_then_extended_then_unchanged(
    researcher: Client, shared_data: Callable[[str], Path]
) -> None:
    pdf = next((shared_data("syllabusqa") / "syllabi" / "syllabi_redacted" / "pdf").glob("1. Syllabus*.pdf"))
    notes = b"# Cells\n\nMitochondria release energy from glucose during cellular respiration.\n\nShort.\n"
    job = _job(
        _post(researcher, [_file(pdf.name, pdf.read_bytes()), _file("notes.md", notes)], new_name="lab")
    )
    assert job.status == Job.Status.DONE, job.error
    corpus = Corpus.objects.get(name="lab")
    assert corpus.documents.count() == 2 and corpus.documents.get(name=pdf.stem).pdf
    assert Passage.objects.filter(corpus=corpus, text__startswith="Mitochondria").exists()
    assert not Passage.objects.filter(corpus=corpus, text="Short.").exists()  # under 40 characters
    more = b"Chloroplasts capture light energy and store it in the chemical bonds of glucose.\n"
    extend = {"target": "existing", "existing": "lab"}
    job = _job(_post(researcher, [_file("more.txt", more)], **extend))
    assert job.result["summary"]["documents"]["created"] == 1
    job = _job(_post(researcher, [_file("more.txt", more)], **extend))
    assert job.result["line"] == "Corpus 'lab': 0 new document(s), 0 new passage(s) from 1 file(s)."
    textbook = make_corpus(name="book", kind=Corpus.Kind.TEXTBOOK)
    job = _job(_post(researcher, [_file("more.txt", more)], target="existing", existing="book"))
    textbook.refresh_from_db()
    assert job.status == Job.Status.DONE and textbook.kind == Corpus.Kind.TEXTBOOK  # documents keep its kind


def _refused(researcher: Client, response: Any, message: str) -> str:
    job = _job(response)
    assert job.status == Job.Status.FAILED and job.result == {"refused": True}
    page = researcher.get(response["Location"]).content.decode()
    assert "Nothing was imported." in page and message in page, page
    shown = re.search(r'id="upload-refused">(.*?)</div>', page, re.S)
    assert shown and "/tmp" not in shown.group(1) and "upload-" not in shown.group(1)  # no server path
    assert str(settings.CROWDQA_CACHE_DIR) not in page
    return page


def test_importer_refusals__named_file_and_line_nothing_imported(
    researcher: Client, shared_data: Callable[[str], Path]
) -> None:
    files = _sciq_files(shared_data("sciq"), 5, drop="valid.json")
    page = _refused(
        researcher, _post(researcher, files, layout="sciq", new_name="s1"), "valid.json: file not found"
    )
    assert 'href="/corpora/upload/?layout=sciq&amp;target=new&amp;new_name=s1"' in page
    form = researcher.get("/corpora/upload/?layout=sciq&target=new&new_name=s1").content.decode()
    assert '<option value="sciq" selected>' in form and 'value="s1"' in form  # the choices come back

    bad = [_file(n, b'[["not an object"]]') for n in ("train.json", "valid.json", "test.json")]
    _refused(
        researcher, _post(researcher, bad, layout="sciq", new_name="s2"), "record 0: expected a JSON object"
    )
    data, _ = _arc_zip(shared_data("arc"), 5, broken_line=3)
    _refused(
        researcher,
        _post(researcher, [_file("arc.zip", data)], layout="arc", new_name="a1"),
        "ARC-V1-Feb2018-2/ARC-Easy/ARC-Easy-Train.jsonl line 3: malformed question",
    )
    latin = [_file("notes.txt", "Caf\xe9 au lait is not UTF-8 in this file at all.".encode("latin-1"))]
    _refused(researcher, _post(researcher, latin, new_name="d1"), "notes.txt")
    _refused(
        researcher, _post(researcher, [_file("x.zip", _zip({"a/b.csv": b"x"}))], new_name="d2"), "no .txt"
    )
    assert not Corpus.objects.filter(name__in=["s1", "s2", "a1"]).exists()
    assert QAPair.objects.count() == 0 and _uploads_left() == []


def _form_refused(response: Any, message: str) -> str:
    page = response.content.decode()
    assert response.status_code == 400, page[:500]
    assert "Nothing was uploaded." in page and message in page, page
    return page


def test_form_refusals__choices_kept_nothing_stored(researcher: Client, settings: Any) -> None:
    make_corpus(name="syllabi", kind=Corpus.Kind.SYLLABUS)
    json_file = [_file("train.json", b"[]")]
    page = _form_refused(
        _post(researcher, [_file("tool.exe", b"MZ")], layout="sciq", new_name="kept-name"), "not .exe"
    )
    assert 'value="kept-name"' in page and '<option value="sciq" selected>' in page
    _form_refused(_post(researcher, json_file, layout="syllabusqa", new_name="n"), "as .zip file(s)")
    _form_refused(_post(researcher, [], layout="sciq", new_name="n"), "Choose at least one file")
    _form_refused(_post(researcher, json_file, layout="sciq", new_name="syllabi"), "exists already")
    _form_refused(_post(researcher, json_file, layout="sciq", new_name="a b"), "letters, digits")
    _form_refused(_post(researcher, json_file, layout="sciq", new_name="upload"), "reserved")
    _form_refused(
        _post(researcher, json_file, layout="sciq", target="existing", existing="nope"), "valid choice"
    )
    _form_refused(
        _post(researcher, json_file, layout="sciq", target="existing", existing="syllabi"),
        "Create a new corpus",
    )
    _form_refused(
        _post(researcher, [_file("a.zip", b"PK\x03\x04 not a zip")], new_name="n"), "cannot be read"
    )
    slip = _zip({"../../etc/evil.txt": b"x" * 50})
    _form_refused(_post(researcher, [_file("a.zip", slip)], new_name="n"), "outside the zip")
    locked = bytearray(_zip({"secret.txt": b"x" * 50}))  # the "encrypted" flag bit set in both headers
    for signature, offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        locked[locked.index(signature) + offset] |= 0x1
    _form_refused(_post(researcher, [_file("a.zip", bytes(locked))], new_name="n"), "password-protected")
    twice = [_file("a.txt", b"x" * 50), _file("a.txt", b"y" * 50)]
    _form_refused(_post(researcher, twice, new_name="n"), "Two files are named a.txt")
    settings.CROWDQA_UPLOAD_MAX_MB = 1
    big = _post(researcher, [_file("big.txt", b"a" * (1024 * 1024 + 10))], layout="documents", new_name="big")
    page = _form_refused(big, "larger than 1 MB")
    assert 'value="big"' in page
    assert Job.objects.count() == 0 and _uploads_left() == [] and not Corpus.objects.filter(name="n").exists()


def test_zip_limits__entries_and_unpacked_bytes(researcher: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(uploads, "MAX_UNPACKED_BYTES", 1000)
    bomb = _zip({"zeros.txt": b"0" * 5000})
    _form_refused(_post(researcher, [_file("bomb.zip", bomb)], new_name="n"), "unpacks to more than")
    monkeypatch.setattr(uploads, "MAX_ZIP_ENTRIES", 3)
    many = _zip({f"f{i}.txt": b"x" for i in range(4)})
    _form_refused(_post(researcher, [_file("many.zip", many)], new_name="n"), "holds 4 entries")


@pytest.fixture
def viewer_client(client: Client) -> Iterator[Client]:
    user = get_user_model().objects.create_user("looker", password="pw-for-tests")
    user.user_permissions.add(
        Permission.objects.get(codename="view_batch", content_type__app_label="annotation")
    )
    client.force_login(user)
    yield client


def test_permissions__only_import_may_upload(client: Client, viewer_client: Client) -> None:
    files = {"layout": "documents", "target": "new", "new_name": "x"}
    anonymous = Client()
    assert anonymous.get(URL).status_code == 302
    assert anonymous.post(URL, files).status_code == 302
    assert viewer_client.get(URL).status_code == 403
    assert viewer_client.post(URL, {**files, "files": [_file("a.txt", b"x" * 50)]}).status_code == 403
    assert b"Add data" not in viewer_client.get("/").content
    worker_user = get_user_model().objects.create_user("wk", password="pw-for-tests")
    make_worker("wk-1", user=worker_user)
    worker = Client()
    worker.force_login(worker_user)
    assert worker.get(URL).status_code == 403
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(make_researcher("csrf-less"))
    assert strict.post(URL, {**files, "files": [_file("a.txt", b"x" * 50)]}).status_code == 403
    assert Job.objects.count() == 0 and not Corpus.objects.exists()
    other = Job.objects.create(kind="export_release")
    assert viewer_client.get(f"/corpora/upload/jobs/{other.pk}/").status_code == 404
    upload = Job.objects.create(kind=uploads.JOB_KIND, params={"layout": "sciq", "corpus": "c", "new": True})
    page = viewer_client.get(f"/corpora/upload/jobs/{upload.pk}/").content.decode()
    assert "Waiting for a worker" in page and "job_refresh" in page
    assert anonymous.get(f"/corpora/upload/jobs/{upload.pk}/").status_code == 302


def test_researcher_home__offers_add_data(researcher: Client) -> None:
    page = researcher.get("/").content.decode()
    assert 'href="/corpora/upload/"' in page
    form = researcher.get(URL).content.decode()
    assert 'type="file"' in form and "multiple" in form and 'enctype="multipart/form-data"' in form
