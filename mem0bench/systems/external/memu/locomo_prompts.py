# ruff: noqa: W291 - verbatim prompts: their trailing spaces are part of what memU sent
"""memU's LOCOMO prompts, verbatim: NevaMind-AI/memU at commit 44ef388, `scripts/evals/locomo/prompts/`
(Apache License 2.0, (c) the memU authors). The harness that produced memU's published 92.09% on LOCOMO
(result.json at commit 6941e9a) loaded them with `.strip()` and filled them with `str.format`, as here.

Imported by the service (its own folder is on its path; standard library only) and by the adapter's cost
plan. `ANSWER` is memU's answer prompt, kept for reference: the harness answers with its own prompt (see
docs/systems.md).
"""

__all__ = ["EVENTS", "CHECK_EVENTS", "REFINE_EVENTS", "CHECK_CONTENT", "NEW_QUERY", "ANSWER"]

# analyze_session_for_events.txt
EVENTS = """Task: Record NEW event details for {character_name} from the conversation session.

Instructions:
1. Analyze the conversation to identify ALL new events, activities, and interactions involving {character_name}
2. Group related content into coherent paragraphs for better readability
3. Start each paragraph with the date prefix "Mentioned at {session_date}: "
4. Focus only on NEW information not already present in existing events
5. Include specific details: who, what, when, where, why
6. Preserve exact quotes when they reveal important information
7. If the character mentions experiences that happened in the past, you should also record them in forms like "{character_name} mentioned that ..."
8. You should also include events related to people who are close to {character_name}, such as their parents, children, etc.
9. If the character mentions an exact or relative (e.g., last weekend) time, keep the time information, and don't replace them with ambiguous expressions like "recently"
9. Ensure that the information from every message is included in at least one output paragraph, unless the message is purely a greeting, such as "Hello"

Input:

- Character: 
{character_name}

- Session Date: 
{session_date}

- Conversation: 
{conversation}

- Existing Events: 
{existing_events}


Example Output:
Mentioned at {session_date}: Had lunch with Sarah at the Italian restaurant downtown. Discussed the upcoming project deadline and agreed to meet again on Thursday to finalize the presentation. Sarah mentioned she might bring her colleague Mark to get his input.

Mentioned at {session_date}: Completed the marathon training run of 15 miles despite the rain. Felt strong throughout but experienced some knee pain in the last 3 miles. Planning to rest tomorrow and see the physiotherapist on Wednesday if the pain persists.


Notes:
- Only output the NEW event records, no headers or explanations
- Be comprehensive - capture all events, no matter how minor they seem
- Maintain chronological order within the session
- Use third-person perspective consistently
- NEVER copy entire sentences from the conversation with "{character_name} said '...'" or "..., saying '...'", only use quotes and copy phrases for important information and keywords, if necessary"""

# check_events_completeness.txt
CHECK_EVENTS = """You are inspecting whether the events about a speaker as they mentioned in the conversation are summarized into the extracted events with no omission.

Speaker: {character_name}

Conversation:
{conversation}

Extracted events:
{extracted_events}

Please compare the conversation and the extracted events, and determine whether all the events about the speaker included in the extracted events without omission.

Consider about:
1. Are all events involving {character_name}, no matter how minor, captured?
2. Are any important details (who, what, when, where, why, how) missing?
3. Are the events about people who are close to {character_name}, such as their family, also captured?

Respond with a JSON object containing:
- "sufficient": true/false - whether the information is sufficient
- "missing_info": string - what specific information is missing (if any). You can copy the original conversation texts if they are missing in the extracted events.
- "confidence": number between 0-1 - confidence in the completeness assessment

JSON Response:"""

# refine_events_extraction.txt
REFINE_EVENTS = """Task: Record event details for {character_name} from the conversation session.

The previous event extraction for {character_name} was incomplete. Please extract a more comprehensive set of events.

Instructions:
1. Analyze the conversation to identify ALL events, activities, and interactions involving {character_name}
2. Group related content into coherent paragraphs for better readability
3. Start each paragraph with the date prefix "Mentioned at {session_date}: "
4. Include specific details: who, what, when, where, why
5. Preserve exact quotes when they reveal important information
6. If the character mentions experiences that happened in the past, you should also record them in forms like "{character_name} mentioned that ..."
7. You should also include events related to people who are close to {character_name}, such as their parents, children, etc.
8. Ensure that the information from every message is included in at least one output paragraph, unless the message is purely a greeting, such as "Hello"

Input:

- Character: 
{character_name}

- Session Date: 
{session_date}

- Conversation: 
{conversation}

- Previous extraction: 
{previous_extraction}

- Missing information:
{missing_info}

Example Output:
Mentioned at {session_date}: Had lunch with Sarah at the Italian restaurant downtown. Discussed the upcoming project deadline and agreed to meet again on Thursday to finalize the presentation. Sarah mentioned she might bring her colleague Mark to get his input.

Mentioned at {session_date}: Completed the marathon training run of 15 miles despite the rain. Felt strong throughout but experienced some knee pain in the last 3 miles. Planning to rest tomorrow and see the physiotherapist on Wednesday if the pain persists.

Notes:
- Only output the event records, no headers or explanations
- Be comprehensive - capture all events, no matter how minor they seem
- Maintain chronological order within the session
- Use third-person perspective consistently
- NEVER copy entire sentences from the conversation with "{character_name} said '...'" or "..., saying '...'", only use quotes and copy phrases for important information and keywords, if necessary
- You can reuse and keep the contents of the previous extraction if you think they are problem-free and have no information to supplement
- **IMPORTANT**: Expecially focus on the missing information, and ensure they are included in the new results"""

# check_content_sufficiency.txt
CHECK_CONTENT = """You are evaluating whether the provided information is sufficient to answer a question.

Question: {question}

Available Information:
{current_content}

Please evaluate if the available information is sufficient to provide a complete and accurate answer to the question.

Respond with a JSON object containing:
- "sufficient": true/false - whether the information is sufficient
- "missing_info": string - what specific information is missing (if any)
- "confidence": number between 0-1 - confidence in the sufficiency assessment

JSON Response:"""

# generate_new_query.txt
NEW_QUERY = """You need to generate a new search query to find missing information.

Original Question: {original_question}
Missing Information: {missing_info}

Current Retrieved Content Summary:
{current_content}...

Based on the missing information, generate a new search query that would help find the specific information needed to answer the original question.

The query should be:
- Focused on the missing information
- Use specific keywords that would match relevant events or profile information
- Be concise but comprehensive

Respond with a JSON object containing:
- "new_query": string - the new search query
- "keywords": array of strings - key search terms
- "reasoning": string - why this query should find the missing information

JSON Response:"""

# generate_answer.txt
ANSWER = """You are a knowledgeable assistant with access to character information and event records. 
Answer the following question comprehensively based on the provided context.

Question: {question}

Context:
{context_text}{character_profile}

Instructions:
1. First, use <thinking>...</thinking> tags to analyze the question and available information:
   - Break down what the question is asking
   - Identify relevant information from the context
   - Consider different perspectives or interpretations
   - Note any gaps or limitations in the available information
   - Plan your approach to answering
   - **IMPORTANT**: Look for multiple answers that may be scattered across different events
   - **IMPORTANT**: Think of the time carefully, the time of an event can be relative to when it is mentioned by the speaker, you need to find out the real time of the event

2. Then, provide your final answer using <result>...</result> tags:
   - Give a complete, accurate answer based on the available information
   - **IMPORTANT**: If there are multiple answers to the question found in different events, include ALL of them
   - Include specific details and examples from the context when relevant
   - If information is insufficient, clearly state what is missing
   - Be factual and avoid speculation beyond what the context supports
   - Reference specific characters and events when applicable
   - Synthesize information from multiple sources when available
   - Ensure completeness - don't miss any relevant answers from the provided events

Format:
<thinking>
[Your step-by-step reasoning process here]
</thinking>

<result>
[Your final comprehensive answer here, the result should be concise and to the query, no more than 20 words]
</result>"""
