"""The ``course`` command: run the notebooks, or prefetch the full profile's downloads.

course run                              # every notebook, smoke profile, outputs/smoke/
course run --profile full --only 01,03  # two lessons on a GPU node
course run --profile full --quick       # every lesson at full size, rows and steps capped: minutes
course run --labs --only 01L            # the lab solutions too (instructors), here lab 01L alone
course prefetch --profile full          # fill the Hugging Face cache before going offline
course site                             # the smoke run as a website: outputs/smoke/site/index.html
course grade 03L submissions/ --jobs 2  # a class's lab notebooks, graded in a sandbox: outputs/grades/03L/
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from course_utils.labs.grading import GradeSettings, grade
from course_utils.machinery.configs import InputError
from course_utils.machinery.offline import MissingAssetError
from course_utils.machinery.paths import notebooks_dir, output_dir, repo_root
from course_utils.machinery.profiles import PROFILE_NAMES, get_profile
from course_utils.machinery.runner import find_notebooks, run_course, write_report
from course_utils.machinery.site import SiteError, SiteSettings, build_site
from course_utils.models_and_data.hub import check_offline_assets, prefetch


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="course", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    default_profile = os.environ.get("COURSE_PROFILE", "smoke")

    run = sub.add_parser("run", help="execute the notebooks in order with papermill")
    run.add_argument(
        "--profile",
        choices=PROFILE_NAMES,
        default=default_profile,
        help="smoke: offline CPU stand-ins (default); full: Hub models on a GPU",
    )
    run.add_argument("--only", default="", help="comma-separated notebook numbers or names, e.g. 01,03 (default: all)")
    run.add_argument(
        "--output-dir",
        type=Path,
        default=None,
        help="where executed notebooks, metrics.json and report.md go (default: outputs/<profile>)",
    )
    run.add_argument(
        "--notebooks-dir",
        type=Path,
        default=None,
        help="folder of NN_name.ipynb notebooks (default: the course's notebooks/)",
    )
    run.add_argument(
        "--cell-timeout",
        type=int,
        default=None,
        help="seconds a single cell may run before it counts as failed (default: no limit)",
    )
    run.add_argument(
        "--labs",
        action="store_true",
        help="also run the labs' solutions (notebooks/labs/solutions), after the lessons; "
        "--only takes their numbers too, e.g. 01L",
    )
    run.add_argument(
        "--quick",
        action="store_true",
        help="full architectures and settings, rows and steps capped (profiles.QUICK_CAPS): "
        "checks a cluster in minutes before the long run",
    )

    site = sub.add_parser("site", help="build a static website from what `course run` wrote (executes nothing)")
    site.add_argument(
        "--profile",
        choices=PROFILE_NAMES,
        default=default_profile,
        help="the run to publish: smoke (default) or full",
    )
    site.add_argument(
        "--output-dir",
        type=Path,
        default=None,
        help="the run's folder (default: outputs/<profile>); the site goes into its site/ folder",
    )
    site.add_argument(
        "--with-solutions",
        action="store_true",
        help="also publish the labs' solutions, as `course run --labs` executed them",
    )
    site.add_argument(
        "--source-url",
        default=None,
        help="where the repository's files are online, e.g. https://github.com/ORG/REPO/blob/main; "
        "links to them (course_utils/, data/README.md) go there, and are shown as plain paths without it",
    )

    grade = sub.add_parser("grade", help="grade a class's submissions of a lab with the course's checks, sandboxed")
    grade.add_argument("lab", help="the lab, e.g. 03L")
    grade.add_argument(
        "submissions", type=Path, help="a folder of .ipynb files, or of one folder per student, or a .zip export"
    )
    grade.add_argument(
        "--profile", choices=PROFILE_NAMES, default=default_profile, help="the profile the labs run in (smoke)"
    )
    grade.add_argument("--jobs", type=int, default=None, help="submissions graded at once (default: the cores)")
    grade.add_argument("--timeout", type=int, default=None, help="seconds a submission may take (default: profile)")
    grade.add_argument("--cell-timeout", type=int, default=None, help="seconds a cell may take (default: profile)")
    grade.add_argument("--memory-gib", type=float, default=None, help="a submission's memory cap (default: profile)")
    grade.add_argument("--force", action="store_true", help="grade again what an earlier run graded")
    grade.add_argument(
        "--output-dir", type=Path, default=None, help="where the gradebook goes (default: outputs/grades/<lab>)"
    )

    pre = sub.add_parser("prefetch", help="download the Hub models and data sets a profile needs")
    pre.add_argument(
        "--profile",
        choices=PROFILE_NAMES,
        default="full",
        help="the profile whose assets to download (smoke needs none)",
    )
    return parser


def _run(args) -> int:
    profile = get_profile(args.profile, quick=args.quick)
    out = output_dir(profile.name, args.output_dir)
    try:
        notebooks = find_notebooks(args.notebooks_dir or notebooks_dir(), args.only.split(","), labs=args.labs)
        check_offline_assets(profile)
    except (InputError, MissingAssetError) as err:
        print(f"course run: {err}", file=sys.stderr)
        return 2
    if not notebooks:
        print("course run: no notebooks found", file=sys.stderr)
        return 2
    print(f"Running {len(notebooks)} notebook(s), profile {profile.name}{', quick' if args.quick else ''}, into {out}")
    results = run_course(notebooks, profile.name, out, cell_timeout=args.cell_timeout, quick=args.quick)
    report = write_report(results, out, profile.name, args.quick)
    failed = [r for r in results if not r.ok]
    print(f"Report: {report}")
    for r in failed:
        print(f"FAILED {r.name}: {r.failure.describe()}", file=sys.stderr)
    return 1 if failed else 0


def _prefetch(args) -> int:
    profile = get_profile(args.profile)
    fetched = prefetch(profile)
    print(f"{len(fetched)} asset(s) in the Hugging Face cache for profile {profile.name}.")
    return 0


def _site(args) -> int:
    settings = SiteSettings.for_profile(
        args.profile,
        output_dir(args.profile, args.output_dir),
        with_solutions=args.with_solutions,
        source_url=args.source_url,
    )
    try:
        build_site(settings)
    except SiteError as err:
        print(f"course site: {err}", file=sys.stderr)
        return 2
    return 0


def _grade(args) -> int:
    limits = get_profile(args.profile).grading
    settings = GradeSettings(
        lab=args.lab,
        submissions=args.submissions,
        out_dir=args.output_dir or repo_root() / "outputs" / "grades" / args.lab,
        jobs=args.jobs or len(os.sched_getaffinity(0)),
        timeout_s=args.timeout or limits["timeout_s"],
        cell_timeout_s=args.cell_timeout or limits["cell_timeout_s"],
        memory_gib=args.memory_gib or limits["memory_gib"],
        profile=args.profile,
        force=args.force,
    )
    try:
        grade(settings)
    except InputError as err:
        print(f"course grade: {err}", file=sys.stderr)
        return 2
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    return {"run": _run, "prefetch": _prefetch, "site": _site, "grade": _grade}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
