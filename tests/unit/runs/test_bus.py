"""The in-process live bus: subscribers hear what is published while they listen, in
order, and one that falls behind is told it missed messages instead of growing."""

from __future__ import annotations

import asyncio

from app.runs.bus import BUFFERED, GAP, LocalBus


async def test_a_subscriber_hears_messages_published_while_it_listens_in_order() -> None:
    bus = LocalBus()
    await bus.publish("run:1", b"before")  # nobody listens yet: gone

    async with bus.subscribe("run:1") as messages:
        await bus.publish("run:1", b"a")
        await bus.publish("run:2", b"other topic")
        await bus.publish("run:1", b"b")
        heard = [await messages.get(), await messages.get()]

    assert heard == [b"a", b"b"]
    assert bus.listening("run:1") == 0


async def test_a_subscriber_that_falls_behind_gets_a_gap_and_stays_bounded() -> None:
    bus = LocalBus()
    async with bus.subscribe("user:7") as messages:
        for n in range(BUFFERED + 10):
            await bus.publish("user:7", b"%d" % n)

        first = await messages.get()
        await bus.publish("user:7", b"fresh")
        after = await messages.get()

    assert first is GAP
    assert after == b"fresh"


async def test_every_subscriber_of_a_topic_hears_each_message() -> None:
    bus = LocalBus()
    async with bus.subscribe("conversation:c") as one, bus.subscribe("conversation:c") as two:
        waiting = asyncio.gather(one.get(), two.get())
        await asyncio.sleep(0)
        await bus.publish("conversation:c", b"x")
        assert list(await asyncio.wait_for(waiting, 1)) == [b"x", b"x"]
