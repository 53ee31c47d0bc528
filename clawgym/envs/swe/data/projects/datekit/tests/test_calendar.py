import datetime as dt
import unittest

from datekit import add_months, days_in_month, is_leap_year, iso_week, last_weekday_of_month, month_range, nth_weekday, quarter


class TestCalendar(unittest.TestCase):
    def test_leap_years(self):
        """Leap years follow the Gregorian 4/100/400 rule."""
        self.assertEqual([is_leap_year(y) for y in (1900, 2000, 2023, 2024, 2100)], [False, True, False, True, False])

    def test_days_in_month(self):
        """February has 29 days in a leap year; April has 30; December 31."""
        self.assertEqual((days_in_month(2024, 2), days_in_month(2023, 2), days_in_month(2023, 4), days_in_month(2023, 12)), (29, 28, 30, 31))

    def test_days_in_month_rejects_bad_month(self):
        """Month 13 and month 0 are rejected."""
        for month in (0, 13):
            with self.assertRaises(ValueError):
                days_in_month(2024, month)

    def test_add_months_simple(self):
        """Adding months keeps the day of month when it exists."""
        self.assertEqual(add_months(dt.date(2024, 1, 15), 1), dt.date(2024, 2, 15))

    def test_add_months_clamps(self):
        """Jan 31 plus one month is the last day of February."""
        self.assertEqual(add_months(dt.date(2024, 1, 31), 1), dt.date(2024, 2, 29))
        self.assertEqual(add_months(dt.date(2023, 1, 31), 1), dt.date(2023, 2, 28))

    def test_add_months_across_years(self):
        """Adding or subtracting months crosses year boundaries."""
        self.assertEqual(add_months(dt.date(2023, 11, 30), 3), dt.date(2024, 2, 29))
        self.assertEqual(add_months(dt.date(2024, 1, 10), -1), dt.date(2023, 12, 10))
        self.assertEqual(add_months(dt.date(2024, 3, 31), -13), dt.date(2023, 2, 28))

    def test_add_months_to_december(self):
        """Adding months can land in December."""
        self.assertEqual(add_months(dt.date(2024, 10, 31), 2), dt.date(2024, 12, 31))

    def test_month_range(self):
        """month_range gives the first and last day."""
        self.assertEqual(month_range(2024, 2), (dt.date(2024, 2, 1), dt.date(2024, 2, 29)))

    def test_quarter(self):
        """Months map to quarters 1..4."""
        self.assertEqual([quarter(dt.date(2024, m, 1)) for m in (1, 3, 4, 6, 7, 9, 10, 12)], [1, 1, 2, 2, 3, 3, 4, 4])

    def test_iso_week_matches_isocalendar(self):
        """iso_week agrees with date.isocalendar around year ends."""
        for day in (dt.date(2020, 12, 31), dt.date(2021, 1, 3), dt.date(2021, 1, 4), dt.date(2024, 12, 30), dt.date(2026, 6, 15)):
            expected = day.isocalendar()
            self.assertEqual(iso_week(day), (expected[0], expected[1]), day)

    def test_nth_weekday(self):
        """The second Tuesday of March 2024 is the 12th; the first Friday is the 1st."""
        self.assertEqual(nth_weekday(2024, 3, 1, 2), dt.date(2024, 3, 12))
        self.assertEqual(nth_weekday(2024, 3, 4, 1), dt.date(2024, 3, 1))

    def test_nth_weekday_missing(self):
        """There is no fifth Monday in February 2024."""
        with self.assertRaises(ValueError):
            nth_weekday(2024, 2, 0, 5)

    def test_last_weekday(self):
        """The last Friday of May 2024 is the 31st; the last Monday is the 27th."""
        self.assertEqual(last_weekday_of_month(2024, 5, 4), dt.date(2024, 5, 31))
        self.assertEqual(last_weekday_of_month(2024, 5, 0), dt.date(2024, 5, 27))
