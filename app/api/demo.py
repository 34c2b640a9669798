"""A built-in forecast service, so the default assistant's `get_forecast` works offline.

The answer is derived from a hash of the city and day: the same question always gets the
same forecast, which keeps demos and tests reproducible. THREADLINE_FORECAST_DELAY_S adds
an artificial wait, to show that a slow tool does not hold up other threads.
"""

import asyncio
import hashlib
from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import BaseModel

from app.config import get_settings

router = APIRouter(prefix="/demo", tags=["Demo"])

SUMMARIES = ("sunny", "partly cloudy", "cloudy", "light rain", "showers", "windy", "foggy")


class Forecast(BaseModel):
    """One day's forecast for one city."""

    city: str
    day: str
    summary: str
    high_c: int
    low_c: int
    precipitation_chance: float


@router.get("/forecast")
async def forecast(
    city: Annotated[str, Query(max_length=100, pattern=r"\S")],
    day: Annotated[str, Query(min_length=1, max_length=40)] = "today",
) -> Forecast:
    """Deterministic per (city, day), case-insensitively."""
    delay = get_settings().forecast_delay_s
    if delay > 0:
        await asyncio.sleep(delay)
    city, day = city.strip(), day.strip()
    digest = hashlib.sha256(f"{city.lower()}|{day.lower()}".encode()).digest()
    low = digest[1] % 25 - 5
    return Forecast(
        city=city,
        day=day,
        summary=SUMMARIES[digest[0] % len(SUMMARIES)],
        high_c=low + 3 + digest[2] % 10,
        low_c=low,
        precipitation_chance=round(digest[3] / 255, 2),
    )
