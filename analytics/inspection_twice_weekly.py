"""Twice-weekly routine inspections on large sites (reason ``routine``, subject = the site id).

NY GP-0-25-001 Part IV.C: when more than ``inspection.twice_weekly_over_acres``
(5 acres) are disturbed at once (``site.disturbed_acres``), two inspections
every 7 calendar days, at least ``inspection.twice_weekly_min_gap_days`` (2)
full days apart. This cadence replaces the routine one (it is the routine
cadence of such a site).

siltwatch counts 7-day periods from the clock start (local dates P..P+6). The
first inspection of a period is due by the end of P+3 (the last day that
leaves room for the second 2 full days later inside the period); once it is
done on day D, the second duty appears at the start of day D+3 and is due by
the end of P+6. Inspections in between do not count as the second.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta

from analytics.episodes import DutyRecord
from analytics.inspection_desk import DutyDesk
from analytics.inspection_overdue import DutyNote
from analytics.inspection_timers import SecondTimer, WeekTimer
from siltwatch.config import SiteConfig
from siltwatch.rulepacks import Rules
from siltwatch.vocabulary import DutyReason

DAYS = 7  # "twice every 7 calendar days"


@dataclass(frozen=True)
class TwiceWeeklyRule:
    min_gap_days: int
    over_acres: float
    cite: str

    @classmethod
    def from_site(cls, site: SiteConfig, rules: Rules) -> TwiceWeeklyRule | None:
        """The rule when the site disturbs more than the pack's acreage at once, else None."""
        over = rules.get("inspection.twice_weekly_over_acres")
        acres = site.site.disturbed_acres
        # NY GP-0-25-001 Part IV.C: twice every 7 days when more than 5 acres are disturbed at once.
        if over is None or acres is None or not acres > float(over.value):
            return None
        return cls.of_rules(rules)

    @classmethod
    def of_rules(cls, rules: Rules) -> TwiceWeeklyRule | None:
        """The rule as the packs set it, whatever the site's acres (None: not set)."""
        over = rules.get("inspection.twice_weekly_over_acres")
        if over is None:
            return None
        gap = rules.get("inspection.twice_weekly_min_gap_days")
        return cls(
            min_gap_days=round(float(gap.value)) if gap else 2,
            over_acres=float(over.value),
            cite=over.cite(),
        )


class TwiceWeeklyCadence:
    """The two duties of each 7-day period: the first at the period's start, the second after it."""

    def __init__(self, rule: TwiceWeeklyRule, site_id: str) -> None:
        self.rule = rule
        self.site_id = site_id
        self.first_duties: dict[str, date] = {}  # duty id of a period's first duty -> period start

    def start(self, t: int, desk: DutyDesk) -> None:
        """The clock starts at ``t``: the first period is the 7 local days from that day."""
        self.open_period(desk.calendar.local_date(t), t, desk)

    def on_week(self, timer: WeekTimer, desk: DutyDesk) -> None:
        self.open_period(timer.period, desk.calendar.at_local(timer.period), desk)

    def open_period(self, period: date, t: int, desk: DutyDesk) -> None:
        """NY GP Part IV.C: the first of two inspections, due early enough to leave room."""
        rule = self.rule
        last_day = period + timedelta(days=DAYS - 1)
        last_first_day = period + timedelta(days=DAYS - 1 - (rule.min_gap_days + 1))
        note = DutyNote(
            label=(
                f"first of two inspections in the 7 days {period.isoformat()} to "
                f"{last_day.isoformat()}"
            ),
            cite=rule.cite,
            evidence={"period_start": period.isoformat(), "of": "1 of 2"},
        )
        span = (t, desk.calendar.end_of_day(last_first_day))
        rec = desk.open(DutyReason.ROUTINE, self.site_id, span, note, t)
        self.first_duties[rec.id] = period
        nxt = period + timedelta(days=DAYS)
        desk.schedule(desk.calendar.start_of_day(nxt), WeekTimer(nxt))

    def on_completed(self, rec: DutyRecord, t: int, desk: DutyDesk) -> None:
        """A period's first duty done on day D: the second may be done from the start of D+3."""
        period = self.first_duties.pop(rec.id, None)
        if period is None:
            return
        first_day = desk.calendar.local_date(t)
        earliest = first_day + timedelta(days=self.rule.min_gap_days + 1)
        desk.schedule(desk.calendar.start_of_day(earliest), SecondTimer(period, first_day))

    def on_second(self, timer: SecondTimer, at: int, desk: DutyDesk) -> None:
        """The second inspection of the period, due by its last day (or its earliest day)."""
        rule, period, first_day = self.rule, timer.period, timer.first_day
        earliest = first_day + timedelta(days=rule.min_gap_days + 1)
        last_day = max(period + timedelta(days=DAYS - 1), earliest)
        note = DutyNote(
            label=(
                f"second of two inspections in the 7 days from {period.isoformat()}, at least "
                f"{rule.min_gap_days} full days after the first ({first_day.isoformat()})"
            ),
            cite=rule.cite,
            evidence={
                "period_start": period.isoformat(),
                "of": "2 of 2",
                "first": first_day.isoformat(),
            },
        )
        desk.open(
            DutyReason.ROUTINE, self.site_id, (at, desk.calendar.end_of_day(last_day)), note, at
        )
