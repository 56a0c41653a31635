"""Rendering results: terminal summary tables, allure attachments, certification reports."""
