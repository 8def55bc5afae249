"""CaseThreads with `inline`: a case answered at once in the caller's thread (a warm response
cache) is never handed to a thread, a miss goes to the threads, and after misses the caller tries
less and less often."""

import threading

from agenteval.scheduling import CaseThreads


def run_all(items, inline, workers=4):
    ran_on = {}

    def run(item):
        ran_on[item] = threading.current_thread().name
        return ("thread", item)

    threads = CaseThreads(run, workers, None, lambda item, slot: ("given up", item), inline)
    return list(threads.results(items)), ran_on


def test_every_case_the_caller_can_answer_is_answered_in_its_own_thread():
    caller = threading.current_thread().name
    tried = []

    def inline(item):
        tried.append((item, threading.current_thread().name))
        return ("inline", item)

    results, ran_on = run_all(range(50), inline)
    assert results == [("inline", item) for item in range(50)]  # in order: nothing went to a thread
    assert tried == [(item, caller) for item in range(50)] and ran_on == {}


def test_after_misses_the_caller_tries_one_case_in_1_2_4_then_8_and_so_on():
    tried = []

    def inline(item):
        tried.append(item)
        return None

    results, ran_on = run_all(range(100), inline)
    assert sorted(results) == [("thread", item) for item in range(100)]  # every case once, on the threads
    assert sorted(ran_on) == list(range(100)) and all(name == "agenteval-case" for name in ran_on.values())
    assert tried == [0, 2, 5, 10, 19, 36, 69]  # skipping 1, 2, 4, 8, 16, 32 cases between tries


def test_a_hit_after_misses_has_the_caller_try_the_next_case_again():
    tried = []
    cached = {0, 2, 3, 4, 30, 31}

    def inline(item):
        tried.append(item)
        return ("inline", item) if item in cached else None

    results, ran_on = run_all(range(40), inline)
    answered = {0, 3, 4}  # the cached cases the caller tried (2, 30 and 31 came while it was holding back)
    assert sorted(results, key=lambda pair: pair[1]) == [("inline" if item in answered else "thread", item) for item in range(40)]
    # 0 hit; 1 miss (skip 2); 3, 4 hits; 5 miss (skip 6); 7 miss (skip 8, 9); 10 miss (skip 11-14); 15 miss (skip 16-23);
    # 24 miss (skip 25-39)
    assert tried == [0, 1, 3, 4, 5, 7, 10, 15, 24]
    assert sorted(ran_on) == sorted(set(range(40)) - {0, 3, 4})


def test_what_the_threads_finish_is_handed_over_between_the_callers_own_answers():
    import time

    def inline(item):
        if item == 0:
            return None  # case 0 goes to a thread (and, after the miss, case 1 too)
        if item == 2:
            deadline = time.monotonic() + 5
            while threads._done.qsize() < 2 and time.monotonic() < deadline:  # both threads' results are waiting
                time.sleep(0.001)
        return ("inline", item)

    threads = CaseThreads(lambda item: ("thread", item), 2, None, lambda item, slot: None, inline)
    order = list(threads.results(range(4)))
    assert order == [("inline", 2), ("thread", 0), ("thread", 1), ("inline", 3)] or order == [
        ("inline", 2), ("thread", 1), ("thread", 0), ("inline", 3)
    ]


class CountedThreads(CaseThreads):
    started = 0

    def _start_worker(self):
        self.started += 1
        super()._start_worker()


def test_threads_start_as_cases_go_to_them_up_to_the_workers():
    """The first case goes to a thread at once (not after `workers` threads have started), no more
    threads start than cases went to them, and a run the caller answers whole starts none."""
    def run(item):
        return ("thread", item)

    few = CountedThreads(run, 8, None, lambda item, slot: ("given up", item))
    assert sorted(few.results(range(3))) == [("thread", 0), ("thread", 1), ("thread", 2)] and few.started == 3
    many = CountedThreads(run, 4, None, lambda item, slot: ("given up", item))
    assert sorted(many.results(range(40))) == [("thread", item) for item in range(40)] and many.started == 4
    answered = CountedThreads(run, 4, None, lambda item, slot: ("given up", item), lambda item: ("inline", item))
    assert list(answered.results(range(10))) == [("inline", item) for item in range(10)] and answered.started == 0
