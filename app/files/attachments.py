"""File parts in a turn: admitted at the edge, expanded for the model at each call.

`stage` (when a turn arrives, before its run starts):
    inline data URL      -> stored as the caller's file (capped, typed by its bytes), and
                            the part keeps only the file's id (no base64 in the history)
    `file_...` id        -> must be the caller's file (404 otherwise); name and media
                            type are taken from the stored file
    image, model without `supports_vision`   -> 400 naming the model
    anything else (an https URL, a client id) -> left as it is
  Items added to a conversation without a turn (`model` None) are admitted the same way,
  but no model reads them yet: no vision check, and an inline image is kept as sent (the
  items API shows it back as its `image_url`).
  `stage` stores an inline file's bytes but records no file: the `Admission` records them
  in the transaction that stores the messages referring to them, and `settle` removes the
  bytes of any it did not (that transaction failed, or a keyed repeat answered first), so
  a failed request leaves no file nobody refers to.
  `for_request` admits a stateless turn (nothing stored, the client sends the whole
  history each time): its inline files are read (capped, typed, their text extracted) for
  that request only, held in memory by its run and never stored, so they use no quota
  and leave nothing behind; the part gets an id that only this run knows. Stored, they
  would be files of the caller's that no conversation holds, that nothing lists and
  nothing removes, each resend of the history storing another copy. Files sent by id
  are the caller's stored files, as in any turn.

`for_model` (in the run, before the history is fitted): a document part becomes a text
part holding the document's extracted text (cached with the file, or held in memory for a
stateless run's inline file), cut to this turn's share of the context budget; an image
part gets its bytes as a data URL for vision models. What was cut is reported so the
stream can say so. A file that cannot be read becomes a note telling the model so; a
database out of reach (`Unavailable`) is not the file's fault, so it ends the run with the
retryable `database_unavailable` instead.
"""

from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote_to_bytes

from app.domain.errors import ChatBffError, InvalidRequest, NotFound, Unavailable
from app.domain.files import MEDIA_TYPES, FileRecord, FileTooLarge, InlineFile, is_image
from app.domain.messages import Message
from app.domain.models import ModelInfo
from app.domain.parts import FileData, FilePart, Part, TextData, TextPart
from app.files.service import Files, StagedUpload
from app.store.database import Tx

log = logging.getLogger("chat_bff.files")

CHARS_PER_TOKEN = 4
DOCUMENT_SHARE = 0.5  # of the context window, for all the documents of one call together
OUR_ID_PREFIX = "file_"


@dataclass
class Expanded:
    messages: list[Message]
    cut: list[str] = field(default_factory=list)  # names of documents cut to fit


def _file_parts(messages: list[Message]) -> list[FilePart]:
    return [
        p
        for m in messages
        if m.role == "user" and not isinstance(m.content, str)
        for p in m.content
        if isinstance(p, FilePart)
    ]


def _decode_data_url(url: str, max_bytes: int) -> bytes:
    header, sep, payload = url[5:].partition(",")
    if not sep:
        raise InvalidRequest("A data URL has no `,` before its data.")
    if header.endswith(";base64"):
        if len(payload) * 3 // 4 > max_bytes + 3:
            raise FileTooLarge(max_bytes)
        try:
            data = base64.b64decode(payload, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise InvalidRequest("A data URL's base64 data is not valid.") from exc
    else:
        data = unquote_to_bytes(payload)
    if len(data) > max_bytes:
        raise FileTooLarge(max_bytes)
    return data


@dataclass
class Admission:
    """Messages with their file parts resolved, the ids of the caller's files they refer
    to, and the inline files among them staged (bytes stored, no file recorded yet), or,
    with `inline` (a stateless turn), read into it for this request only."""

    files: Files
    owner_id: str
    messages: list[Message]
    file_ids: list[str] = field(default_factory=list)
    staged: list[StagedUpload] = field(default_factory=list)
    inline: dict[str, InlineFile] | None = None

    async def record(self, tx: Tx, conversation_id: str | None) -> None:
        """The staged files recorded as the caller's, and (with a conversation) all the
        files tied to it, in the transaction that stores the messages."""
        for staged in self.staged:
            await self.files.record(tx, staged)
        if conversation_id is not None:
            await tx.files.attach(self.owner_id, self.file_ids, conversation_id)

    async def settle(self) -> None:
        """After the request, done or failed: the bytes of a staged file not recorded go
        (kept when the database cannot tell, as `Files.unless_recorded` says)."""
        for staged in self.staged:
            await self.files.unless_recorded(staged)


class Attachments:
    def __init__(self, files: Files) -> None:
        self.files = files

    # -- at the edge ------------------------------------------------------------------

    async def for_request(
        self, owner_id: str, messages: list[Message], model: ModelInfo
    ) -> tuple[list[Message], dict[str, InlineFile]]:
        """A stateless turn with its file parts resolved (see the module doc), and its
        inline files, read for this request only, by the ids its parts now carry."""
        admission = Admission(self.files, owner_id, messages, inline={})
        await self._resolve(owner_id, model, admission)
        return admission.messages, admission.inline or {}

    async def stage(
        self, owner_id: str, messages: list[Message], model: ModelInfo | None
    ) -> Admission:
        """`admit`, its inline files staged for `Admission.record` to record; a refusal
        (a file too large, a foreign id, an image for a model without vision) leaves none."""
        admission = Admission(self.files, owner_id, messages)
        try:
            await self._resolve(owner_id, model, admission)
        except BaseException:
            for staged in admission.staged:
                await self.files.discard(staged)
            raise
        return admission

    async def _resolve(self, owner_id: str, model: ModelInfo | None, admission: Admission) -> None:
        messages = admission.messages
        parts = [
            p
            for p in _file_parts(messages)
            if model is not None or not (_is_data_url(p.data) and _names_image(p.data))
        ]
        if not parts:
            return
        known = await self._known(owner_id, parts)
        resolved: dict[int, FilePart] = {}
        for part in parts:
            record = await self._record_for(owner_id, part, known, admission)
            image = is_image(record.mimeType or "") if record else _names_image(part.data)
            if image and model is not None and not model.supports_vision:
                raise InvalidRequest(
                    f"The model `{model.id}` does not accept images (its catalogue entry "
                    "has no supports_vision); choose a vision model or leave the image out.",
                    code="model_lacks_vision",
                    param="model",
                )
            if record is None:
                continue
            resolved[id(part)] = FilePart(id=part.id, data=record)
        admission.messages = [_swap(m, resolved) for m in messages]
        admission.file_ids = sorted({p.data.id for p in resolved.values()})

    async def _known(self, owner_id: str, parts: list[FilePart]) -> dict[str, FileRecord]:
        ids = [p.data.id for p in parts if p.data.id.startswith(OUR_ID_PREFIX) and not p.data.url]
        async with self.files.db.read() as tx:
            return await tx.files.get_many(owner_id, ids)

    async def _record_for(
        self,
        owner_id: str,
        part: FilePart,
        known: dict[str, FileRecord],
        admission: Admission,
    ) -> FileData | None:
        """The stored file a part names, as the part then refers to it (None: left as sent)."""
        data = part.data
        if data.url and data.url.startswith("data:"):
            raw = _decode_data_url(data.url, self.files.limits.max_bytes)
            if admission.inline is not None:
                inline = await self.files.inline(owner_id, data.name, raw)
                admission.inline[inline.record.id] = inline
                return FileData(
                    id=inline.record.id, name=inline.record.name, mimeType=inline.record.media_type
                )
            upload = await self.files.stage_bytes(owner_id, data.name, raw)
            admission.staged.append(upload)
            return FileData(id=upload.file_id, name=upload.name, mimeType=MEDIA_TYPES[upload.kind])
        if data.url or not data.id.startswith(OUR_ID_PREFIX):
            return None  # a remote URL or a client's own reference: passed on as it is
        record = known.get(data.id)
        if record is None:
            raise NotFound(f"No file {data.id!r}.", param="file_id")
        return FileData(id=record.id, name=record.name, mimeType=record.media_type)

    # -- for the model ----------------------------------------------------------------

    async def for_model(
        self,
        owner_id: str,
        messages: list[Message],
        model: ModelInfo,
        reserve_tokens: int,
        inline: Mapping[str, InlineFile] | None = None,
    ) -> Expanded:
        inline = inline or {}
        parts = [p for p in _file_parts(messages) if p.data.id.startswith(OUR_ID_PREFIX)]
        if not parts:
            return Expanded(messages)
        stored = [p.data.id for p in parts if p.data.id not in inline]
        records: dict[str, FileRecord] = {}
        if stored:
            async with self.files.db.read() as tx:
                records = await tx.files.get_many(owner_id, stored)
        records |= {file_id: held.record for file_id, held in inline.items()}
        documents = [p for p in parts if p.data.id in records and not p.data.url]
        texts = sum(1 for p in documents if not is_image(records[p.data.id].media_type))
        window = max(model.context_window - reserve_tokens, model.context_window // 4)
        share = int(window * CHARS_PER_TOKEN * DOCUMENT_SHARE) // max(texts, 1)
        expanded = Expanded([])
        replaced: dict[int, Part] = {}
        for part in documents:
            replaced[id(part)] = await self._for_model(
                records[part.data.id], model, share, expanded, inline.get(part.data.id)
            )
        expanded.messages = [_swap(m, replaced) for m in messages]
        return expanded

    async def _for_model(
        self,
        record: FileRecord,
        model: ModelInfo,
        share: int,
        expanded: Expanded,
        inline: InlineFile | None,
    ) -> Part:
        try:
            if is_image(record.media_type):
                if not model.supports_vision:
                    return _note(f"[Image {record.name} left out: {model.id} reads no images]")
                raw = inline.data if inline else await self.files.read_bytes(record)
                url = f"data:{record.media_type};base64,{base64.b64encode(raw).decode()}"
                return FilePart(
                    data=FileData(
                        id=record.id, name=record.name, mimeType=record.media_type, url=url
                    )
                )
            extraction = inline.text if inline else await self.files.text_of(record)
        except Unavailable:
            raise  # the database, not the file: the run fails retryable, the file is fine
        except (ChatBffError, KeyError, OSError) as exc:
            log.warning("attachment unreadable", extra={"file_id": record.id, "error": str(exc)})
            return _note(f"[Attached file {record.name} could not be read.]")
        text = extraction.text if extraction is not None else ""
        cut = extraction is not None and extraction.truncated
        if len(text) > share:
            text, cut = text[:share], True
        if cut:
            expanded.cut.append(record.name)
        tail = "\n[... the document was cut here to fit ...]" if cut else ""
        return _note(
            f'<document name="{record.name}" type="{record.media_type}">\n{text}{tail}\n</document>'
        )


def _swap(message: Message, replaced: Mapping[int, Part]) -> Message:
    """The message with some of its parts (by object identity) replaced."""
    if isinstance(message.content, str) or not replaced:
        return message
    content: list[Part] = [replaced.get(id(p), p) for p in message.content]
    return message.model_copy(update={"content": content})


def _is_data_url(data: FileData) -> bool:
    return (data.url or "").startswith("data:")


def _names_image(data: FileData) -> bool:
    mime = data.mimeType or ""
    return mime.startswith("image/") or (data.url or "").startswith("data:image/")


def _note(text: str) -> TextPart:
    return TextPart(data=TextData(text=text))
