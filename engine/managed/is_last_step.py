"""LangGraph's older import path for the step-counting managed values
(`from langgraph.managed.is_last_step import RemainingSteps`), kept so such programs port."""

from engine.managed import IsLastStep, IsLastStepManager, RemainingSteps, RemainingStepsManager

__all__ = ["IsLastStep", "IsLastStepManager", "RemainingSteps", "RemainingStepsManager"]
