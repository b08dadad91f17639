//! The rule that picks the figures standing for a serving run (`milabench load`): the same
//! rule when `load` writes its events and when the report reads them back.

/// A step of a serving run, as the headline rule sees it.
pub trait ServingStep {
    /// The step's request rate, for a step that released its requests at a rate (`server`).
    fn rate(&self) -> Option<f64>;

    /// Whether the step held: no failed request and, with an SLO, the SLO met.
    fn held(&self) -> bool;
}

/// The highest rate of `steps` that held (a sweep's or an SLO search's figure); `None` when no
/// step with a rate held.
pub fn highest_held_rate<S: ServingStep>(steps: &[S]) -> Option<f64> {
    steps
        .iter()
        .filter(|s| s.held())
        .filter_map(ServingStep::rate)
        .reduce(f64::max)
}

/// The step whose numbers stand for the run (its output tokens/s are the benchmark's
/// throughput): the first at the highest rate that held, else the first step.
pub fn headline<S: ServingStep>(steps: &[S]) -> Option<&S> {
    let held = highest_held_rate(steps);
    steps
        .iter()
        .find(|s| held.is_some() && s.rate() == held)
        .or(steps.first())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A step of `rate` (none for a step without one) that held or not.
    struct Step(Option<f64>, bool);

    impl ServingStep for Step {
        fn rate(&self) -> Option<f64> {
            self.0
        }

        fn held(&self) -> bool {
            self.1
        }
    }

    #[test]
    fn a_sweep_stands_for_its_highest_rate_that_held() {
        let steps = [
            Step(Some(10.0), true),
            Step(Some(20.0), true),
            Step(Some(40.0), false),
        ];
        assert_eq!(highest_held_rate(&steps), Some(20.0));
        assert_eq!(headline(&steps).and_then(Step::rate), Some(20.0));
    }

    #[test]
    fn without_a_held_rate_the_first_step_stands() {
        let steps = [Step(Some(10.0), false), Step(Some(20.0), false)];
        assert_eq!(highest_held_rate(&steps), None);
        assert_eq!(headline(&steps).and_then(Step::rate), Some(10.0));
        let offline = [Step(None, true)];
        assert_eq!(highest_held_rate(&offline), None);
        assert!(headline(&offline).is_some());
        assert!(headline::<Step>(&[]).is_none());
    }
}
