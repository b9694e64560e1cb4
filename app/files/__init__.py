"""Uploaded files: storage behind a small interface, type by magic bytes, bounded text
extraction, and the service that ties them to their owner's rows.

    store.py      FileStore protocol; DirectoryFileStore (the default)
    sniff.py      the kind of a file from its bytes (puremagic, then parsing for text)
    archive.py    zip checks before any spreadsheet library opens one (bombs refused)
    extract/      PDF, XLSX, CSV, JSON -> text within a budget (pure, run in threads)
    service.py    upload (streamed, capped), read, delete, extraction with a time cap
    sweep.py      bytes no file row names (an upload cut off before its row) removed
    attachments.py  file parts in a turn: resolve ids, inline data URLs, vision check,
                  and the text a model is given in their place
"""
